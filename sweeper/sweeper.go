// Package sweeper enforces retention: message bodies are dropped after the
// replay window, settled messages with their events and deliveries are
// deleted after the metadata retention, and expired console sessions are
// deleted, in small batches.
package sweeper

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"github.com/intakehq/intake"
)

// Config wires a Sweeper.
type Config struct {
	Store         intake.Retention
	Clock         intake.Clock
	BodyRetention time.Duration // default 7 days: the replay window
	Retention     time.Duration // default 30 days
	Batch         int           // rows per transaction (default 500)
	Interval      time.Duration // between sweeps (default 1m)
	// PerSecond paces the deletes of bodies and of messages: at most this
	// many of each a second (default 1000, rate.Inf for no pace), so a
	// backlog (a day past retention at once) leaves as a steady trickle
	// beside the writes acks wait for, not as a burst.
	PerSecond rate.Limit
	Logger    *slog.Logger
}

// Sweeper deletes what retention no longer keeps.
type Sweeper struct {
	cfg              Config
	bodies, messages *rate.Limiter
}

// New returns a sweeper with defaults filled in.
func New(cfg Config) *Sweeper {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.BodyRetention == 0 {
		cfg.BodyRetention = 7 * 24 * time.Hour
	}
	if cfg.Retention == 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	if cfg.Batch == 0 {
		cfg.Batch = 500
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.PerSecond == 0 {
		cfg.PerSecond = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{cfg: cfg, bodies: rate.NewLimiter(cfg.PerSecond, cfg.Batch), messages: rate.NewLimiter(cfg.PerSecond, cfg.Batch)}
}

// Run sweeps every Interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if bodies, messages, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Error("sweeper: sweep failed", "err", err)
		} else if bodies+messages > 0 {
			s.cfg.Logger.Info("sweeper: retention applied", "bodies_dropped", bodies, "messages_deleted", messages)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce drops expired bodies and deletes expired messages and console
// sessions, a batch at a time at the configured pace, until none is left.
func (s *Sweeper) RunOnce(ctx context.Context) (bodies, messages int, err error) {
	now := s.cfg.Clock.Now()
	for {
		if err := s.bodies.WaitN(ctx, s.cfg.Batch); err != nil {
			return bodies, messages, err
		}
		n, err := s.cfg.Store.DropBodies(ctx, now, s.cfg.BodyRetention, s.cfg.Batch)
		bodies += n
		if err != nil || n < s.cfg.Batch {
			if err != nil {
				return bodies, messages, err
			}
			break
		}
	}
	for {
		if err := s.messages.WaitN(ctx, s.cfg.Batch); err != nil {
			return bodies, messages, err
		}
		n, err := s.cfg.Store.DeleteSettled(ctx, now, s.cfg.Retention, s.cfg.Batch)
		messages += n
		if err != nil || n < s.cfg.Batch {
			if err != nil {
				return bodies, messages, err
			}
			break
		}
	}
	for {
		n, err := s.cfg.Store.DeleteExpiredSessions(ctx, now, s.cfg.Batch)
		if err != nil || n < s.cfg.Batch {
			return bodies, messages, err
		}
	}
}

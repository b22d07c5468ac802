package sweeper

import (
	"context"
	"log/slog"
	"time"

	"github.com/intakehq/intake"
)

// BacklogConfig wires a BacklogWatch.
type BacklogConfig struct {
	Store intake.Issues
	Clock intake.Clock
	// Age is how long a consumer's oldest due or held event may wait
	// before its backlog is an issue (default 15m).
	Age time.Duration
	// Interval is between checks (default 30s).
	Interval time.Duration
	Logger   *slog.Logger
}

// BacklogWatch opens the backlog issue of each consumer whose oldest due
// or held event has waited longer than its age, and resolves it once the
// consumer has caught up (DESIGN §20). One process runs it at a time.
type BacklogWatch struct{ cfg BacklogConfig }

// NewBacklogWatch returns a watch with defaults filled in.
func NewBacklogWatch(cfg BacklogConfig) *BacklogWatch {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Age <= 0 {
		cfg.Age = intake.DefaultIssueBacklogAge
	}
	if cfg.Interval == 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &BacklogWatch{cfg: cfg}
}

// Run checks every Interval until ctx ends.
func (b *BacklogWatch) Run(ctx context.Context) error {
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		if err := b.RunOnce(ctx); err != nil && ctx.Err() == nil {
			b.cfg.Logger.Error("backlog watch: check failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce reads the late consumers and the backlog issues, and writes what
// intake.DecideBacklogIssues decides.
func (b *BacklogWatch) RunOnce(ctx context.Context) error {
	now := b.cfg.Clock.Now()
	in, err := b.cfg.Store.Backlogs(ctx, now.Add(-b.cfg.Age))
	if err != nil {
		return err
	}
	ws, ns := intake.DecideBacklogIssues(in, now, b.cfg.Age)
	if len(ws) == 0 {
		return nil
	}
	return b.cfg.Store.WriteIssues(ctx, ws, ns)
}

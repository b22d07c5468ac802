package sweeper

import (
	"context"
	"log/slog"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/metrics"
)

// BlobsConfig wires a BlobSweeper.
type BlobsConfig struct {
	Store intake.BlobRefs
	Blobs intake.Blobs
	Clock intake.Clock
	// OrphanAge is how old an object no body names must be before it is
	// deleted as an orphan (default intake.BlobOrphanAge): younger, its
	// message's commit may still be in flight.
	OrphanAge time.Duration
	Batch     int           // keys per round (default 1000)
	Interval  time.Duration // between sweeps (default 1m)
	Logger    *slog.Logger
	Metrics   *metrics.Metrics // counts the sweeps (default: a registry of its own)
	// Replica, when set, ships the store off the machine (--replicate):
	// the objects of deleted bodies go only once the replica holds the
	// deletes, so a store restored from it names no object deleted.
	Replica Replica
	// ReplicaRetention, with Replica, is how far back a restore from the
	// replica reaches (--replicate-retention). A store restored to a time
	// names the objects its bodies named then: the object of a deleted
	// body goes only once its delete was recorded longer ago than this,
	// and an orphan only once it is older than this too (and OrphanAge).
	ReplicaRetention time.Duration
}

// Replica ships commits off the machine (replica.Replicator).
type Replica interface {
	// Sync returns once every commit made before it was called is in the
	// replica.
	Sync(ctx context.Context) error
}

// BlobSweeper deletes from object storage the objects no body names: those
// of bodies that retention or an erasure deleted (recorded as pending
// deletes by the same transaction), and orphans, whose message's commit
// failed after the object was written.
type BlobSweeper struct {
	cfg BlobsConfig
	// passed is the last key the orphan sweep has looked at: keys sort by
	// the hour they were written in, and an hour is only looked at once
	// it is an orphan's age old, so nothing is written behind it. A process
	// starts from the first key.
	passed string
}

// NewBlobs returns a blob sweeper with defaults filled in.
func NewBlobs(cfg BlobsConfig) *BlobSweeper {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.OrphanAge == 0 {
		cfg.OrphanAge = intake.BlobOrphanAge
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1000
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &BlobSweeper{cfg: cfg}
}

// Run sweeps every Interval until ctx ends.
func (s *BlobSweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if deleted, orphans, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Error("sweeper: object storage sweep failed; it is tried again", "err", err)
		} else if deleted+orphans > 0 {
			s.cfg.Logger.Info("sweeper: objects deleted", "of_deleted_bodies", deleted, "orphans", orphans)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce deletes the objects of deleted bodies, then the orphans old
// enough, and returns how many of each it deleted. An object a body names
// again (a replay's) is kept. What fails is tried again by the next sweep.
// Each sweep that ends, swept or failed, counts in intake_blob_sweeps_total;
// one that ctx cut short does not.
func (s *BlobSweeper) RunOnce(ctx context.Context) (deleted, orphans int, err error) {
	defer func() {
		switch {
		case err == nil:
			s.cfg.Metrics.BlobSweeps.WithLabelValues("swept").Inc()
		case ctx.Err() == nil:
			s.cfg.Metrics.BlobSweeps.WithLabelValues("failed").Inc()
		}
	}()
	now := s.cfg.Clock.Now()
	// Without a replica every pending delete goes (recorded before the
	// zero time: any); with one, those a restore can no longer reach.
	var recordedBefore time.Time
	orphanAge := s.cfg.OrphanAge
	if s.cfg.Replica != nil {
		recordedBefore = now.Add(-s.cfg.ReplicaRetention)
		orphanAge = max(orphanAge, s.cfg.ReplicaRetention)
	}
	for {
		keys, err := s.cfg.Store.PendingBlobDeletes(ctx, recordedBefore, s.cfg.Batch)
		if err != nil || len(keys) == 0 {
			if err != nil {
				return deleted, orphans, err
			}
			break
		}
		gone, err := s.unnamed(ctx, keys)
		if err != nil {
			return deleted, orphans, err
		}
		if s.cfg.Replica != nil {
			if err := s.cfg.Replica.Sync(ctx); err != nil {
				return deleted, orphans, err
			}
		}
		if err := s.cfg.Blobs.Delete(ctx, gone); err != nil {
			return deleted, orphans, err
		}
		if err := s.cfg.Store.ForgetBlobDeletes(ctx, keys); err != nil {
			return deleted, orphans, err
		}
		deleted += len(gone)
		if len(keys) < s.cfg.Batch {
			break
		}
	}
	old := now.Add(-orphanAge)
	before := intake.BlobHour(old)
	for {
		objs, err := s.cfg.Blobs.List(ctx, s.passed, before, s.cfg.Batch)
		if err != nil || len(objs) == 0 {
			return deleted, orphans, err
		}
		keys := make([]string, len(objs))
		for i, o := range objs {
			keys[i] = o.Key
		}
		gone, err := s.unnamed(ctx, keys)
		if err != nil {
			return deleted, orphans, err
		}
		// Every object listed is in an hour that ended orphanAge ago; the
		// time it was written is checked all the same.
		var orphaned []string
		modified := make(map[string]time.Time, len(objs))
		for _, o := range objs {
			modified[o.Key] = o.Modified
		}
		for _, k := range gone {
			if modified[k].Before(old) {
				orphaned = append(orphaned, k)
			}
		}
		if err := s.cfg.Blobs.Delete(ctx, orphaned); err != nil {
			return deleted, orphans, err
		}
		orphans += len(orphaned)
		s.passed = keys[len(keys)-1]
		if len(objs) < s.cfg.Batch {
			return deleted, orphans, nil
		}
	}
}

// unnamed returns the keys no stored body names.
func (s *BlobSweeper) unnamed(ctx context.Context, keys []string) ([]string, error) {
	named, err := s.cfg.Store.BlobsReferenced(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if !named[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

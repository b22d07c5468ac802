package ingress

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
)

// Quota refuses new webhooks once the store holds more than Limit bytes:
// refusing (503, the provider retries) is recoverable, a full disk may not
// be. The size is sampled in the background, so a request never waits on it.
type Quota struct {
	Limit int64 // bytes; 0 = no quota
	// Spooled, when set, is the size of the bodies kept in files beside
	// the store, counted with it: they fill the same disk.
	Spooled func() int64
	used    atomic.Int64
}

// Used is the last sampled size.
func (q *Quota) Used() int64 { return q.used.Load() }

// Exceeded reports whether ingress should refuse.
func (q *Quota) Exceeded() bool { return q != nil && q.Limit > 0 && q.used.Load() >= q.Limit }

// Sample reads the store's size now.
func (q *Quota) Sample(ctx context.Context, s intake.Ingester) error {
	n, err := s.StorageBytes(ctx)
	if q.Spooled != nil {
		n += q.Spooled()
	}
	if err == nil {
		q.used.Store(n)
	}
	return err
}

// QuotaWatch samples the store's size for a Quota in the background.
type QuotaWatch struct {
	Quota  *Quota
	Store  intake.Ingester
	Every  time.Duration
	Logger *slog.Logger
}

// Run samples every Every until ctx ends.
func (w *QuotaWatch) Run(ctx context.Context) error {
	t := time.NewTicker(w.Every)
	defer t.Stop()
	for {
		if err := w.Quota.Sample(ctx, w.Store); err != nil && ctx.Err() == nil {
			w.Logger.Warn("quota: could not read the store's size", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

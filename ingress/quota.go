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
	used  atomic.Int64
}

// Used is the last sampled size.
func (q *Quota) Used() int64 { return q.used.Load() }

// Exceeded reports whether ingress should refuse.
func (q *Quota) Exceeded() bool { return q != nil && q.Limit > 0 && q.used.Load() >= q.Limit }

// Sample reads the store's size now.
func (q *Quota) Sample(ctx context.Context, s intake.Store) error {
	n, err := s.StorageBytes(ctx)
	if err == nil {
		q.used.Store(n)
	}
	return err
}

// Watch samples every interval until ctx ends.
func (q *Quota) Watch(ctx context.Context, s intake.Store, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := q.Sample(ctx, s); err != nil && ctx.Err() == nil {
			log.Warn("quota: could not read the store's size", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

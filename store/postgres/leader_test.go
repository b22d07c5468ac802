package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
)

func TestOneProcessLeadsAndAnotherTakesOverWhenItsSessionEnds(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := openURL(t, url, 2), openURL(t, url, 2)

	la, err := a.TryLead(ctx, "sweeper")
	if err != nil || la == nil {
		t.Fatalf("a could not lead an unheld job: %v", err)
	}
	if lb, err := b.TryLead(ctx, "sweeper"); err != nil || lb != nil {
		t.Fatalf("b leads while a does (%v)", err)
	}
	other, err := b.TryLead(ctx, "alarms")
	if err != nil || other == nil {
		t.Fatalf("another job's lock is not independent: %v", err)
	}
	other.Release()

	la.Release()
	<-la.Lost()
	lb, err := b.TryLead(ctx, "sweeper")
	if err != nil || lb == nil {
		t.Fatalf("b could not lead after a released: %v", err)
	}

	// b's session dies (a crash, a network cut): b learns it lost the lock,
	// and a can lead.
	pid := lb.conn.PgConn().PID()
	if _, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lb.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("b did not notice its session ended")
	}
	la, err = a.TryLead(ctx, "sweeper")
	if err != nil || la == nil {
		t.Fatalf("a could not take over: %v", err)
	}
	la.Release()
}

func TestLeadRunsTheJobInOneProcessAtATime(t *testing.T) {
	url := pgtest.Database(t)
	stores := []*Store{openURL(t, url, 2), openURL(t, url, 2), openURL(t, url, 2)}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var running, most, runs atomic.Int32
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			s.Lead(ctx, "sweeper", 5*time.Millisecond, func(ctx context.Context) {
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				runs.Add(1)
				select {
				case <-ctx.Done():
				case <-time.After(30 * time.Millisecond):
				}
				running.Add(-1)
			})
		})
	}
	wg.Wait()
	if most.Load() != 1 || runs.Load() < 5 {
		t.Fatalf("at most %d ran at once over %d runs; want 1, and runs handed over", most.Load(), runs.Load())
	}
}

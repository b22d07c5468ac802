package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/storetest"
)

// BenchmarkIngest measures durable ingests per second of 2 KiB bodies from
// 64 concurrent callers, which share commits.
func BenchmarkIngest(b *testing.B) {
	s := openURL(b, pgtest.Database(b), 16)
	o := newOrg(b, s, "bench")
	pad := strings.Repeat("x", 2000)
	var n atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
				if err := s.Ingest(context.Background(), o.message(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, pad))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ingests/s")
}

// roundTrips counts what the pool's connections send: each statement sent
// alone is a round trip, each batch one more, whatever it holds.
type roundTrips struct{ statements, trips atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.statements.Add(1)
	r.trips.Add(1)
	return ctx
}
func (*roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.trips.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	r.statements.Add(1)
}
func (*roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// openCounted opens a store on a database of its own that counts what
// its connections send.
func openCounted(t testing.TB) (*Store, *roundTrips) {
	t.Helper()
	rt := &roundTrips{}
	s := openWith(t, Options{URL: pgtest.Database(t), Tracer: rt})
	return s, rt
}

// scalar is the one value q reads, as text.
func (s *Store) scalar(t testing.TB, q string, args ...any) string {
	t.Helper()
	var v string
	if err := s.pool.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkPipeline reports the statements and round trips one webhook
// costs through the whole pipeline (storetest.BenchmarkPipeline).
func BenchmarkPipeline(b *testing.B) {
	s, rt := openCounted(b)
	storetest.BenchmarkPipeline(b, s, func() (int64, int64) { return rt.statements.Load(), rt.trips.Load() })
}

// BenchmarkPipelineParallel is BenchmarkPipeline from 64 goroutines at
// once, as a loaded server runs it (storetest.BenchmarkPipelineParallel).
func BenchmarkPipelineParallel(b *testing.B) {
	s, rt := openCounted(b)
	storetest.BenchmarkPipelineParallel(b, s, func() (int64, int64) { return rt.statements.Load(), rt.trips.Load() })
}

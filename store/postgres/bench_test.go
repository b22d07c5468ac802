package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
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

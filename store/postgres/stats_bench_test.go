package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// BenchmarkConsumerStats reads one consumer's 24-hour and 7-day history
// with n of its deliveries spread over the last 7 days (10 % failed),
// beside as many of another consumer's, in its org's scope.
//
//	go test -run='^$' -bench=BenchmarkConsumerStats -benchtime=10x ./store/postgres/
func BenchmarkConsumerStats(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("deliveries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := openURL(b, pgtest.Database(b), 4)
			o := newOrg(b, s, "acme")
			var cs [2]string
			for i := range cs {
				c := intake.Consumer{ID: intake.NewID(), OrgID: o.org.ID, Name: fmt.Sprint("c", i), App: "a", URL: "http://127.0.0.1:9/",
					EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("s"), CreatedAt: now}
				if err := s.CreateConsumer(ctx, c); err != nil {
					b.Fatal(err)
				}
				cs[i] = c.ID
			}
			if _, err := s.pool.Exec(ctx, `INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at)
				SELECT gen_random_uuid(), $5, gen_random_uuid(), ($6::uuid[])[1 + i % 2], 1,
				       CASE WHEN i % 10 = 0 THEN 'retry' ELSE 'handled' END, 200, 1000 + i % 50000, '',
				       $2::timestamptz - (i * $3::bigint / $4) * interval '1 microsecond'
				  FROM generate_series(1, $1) i`, 2*n, ts(now), (7 * 24 * time.Hour).Microseconds(), 2*n, o.org.ID, cs[:]); err != nil {
				b.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE deliveries`); err != nil {
				b.Fatal(err)
			}
			for _, w := range []intake.StatsWindow{intake.StatsDay, intake.StatsWeek} {
				b.Run(string(w), func(b *testing.B) {
					for b.Loop() {
						bs, err := s.ConsumerStats(ctx, intake.Scope{OrgID: o.org.ID}, cs[0], w, now)
						if err != nil || bs[len(bs)-1].Delivered == 0 {
							b.Fatalf("stats %+v %v", bs, err)
						}
					}
				})
			}
		})
	}
}

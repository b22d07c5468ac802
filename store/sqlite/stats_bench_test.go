package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// BenchmarkConsumerStats reads one consumer's 24-hour and 7-day history
// with n of its deliveries spread over the last 7 days (10 % failed),
// beside as many of another consumer's.
//
//	go test -run='^$' -bench=BenchmarkConsumerStats -benchtime=10x ./store/sqlite/
func BenchmarkConsumerStats(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("deliveries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "intake.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: now}
			if err := s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}); err != nil {
				b.Fatal(err)
			}
			var cs [2]string
			for i := range cs {
				c := intake.Consumer{ID: intake.NewID(), OrgID: org.ID, Name: fmt.Sprint("c", i), App: "a", URL: "http://127.0.0.1:9/",
					EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("s"), CreatedAt: now}
				if err := s.CreateConsumer(ctx, c); err != nil {
					b.Fatal(err)
				}
				cs[i] = c.ID
			}
			if _, err := s.write.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
				INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at)
				SELECT printf('d-%09d', i), ?4, printf('e-%09d', i), CASE i % 2 WHEN 0 THEN ?5 ELSE ?6 END, 1,
				       CASE WHEN i % 10 = 0 THEN 'retry' ELSE 'handled' END, 200, 1000 + i % 50000, '', ?2 - i * ?3 / ?1 FROM n`,
				2*n, ts(now), (7 * 24 * time.Hour).Microseconds(), org.ID, cs[0], cs[1]); err != nil {
				b.Fatal(err)
			}
			for _, w := range []intake.StatsWindow{intake.StatsDay, intake.StatsWeek} {
				b.Run(string(w), func(b *testing.B) {
					for b.Loop() {
						bs, err := s.ConsumerStats(ctx, intake.Scope{OrgID: org.ID}, cs[0], w, now)
						if err != nil || bs[len(bs)-1].Delivered == 0 {
							b.Fatalf("stats %+v %v", bs, err)
						}
					}
				})
			}
		})
	}
}

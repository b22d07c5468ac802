package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/storetest"
)

// seedMessages bulk-inserts n messages of 10 orgs (org-0 … org-9)
// received evenly over span before now, and as many events, in the
// proportions of a working deployment: nearly all settled, a few per
// thousand live or dead.
func seedMessages(b testing.TB, s *Store, n int, span time.Duration, now time.Time) {
	b.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1),
		      g AS (SELECT i, 'org-' || (i % 10) AS o, ?2 - i * ?3 / ?1 AS r,
		                   CASE WHEN i % 1000 < 2 THEN 'queued' WHEN i % 1000 < 3 THEN 'processing' WHEN i % 1000 < 6 THEN 'failed'
		                        WHEN i % 1000 < 11 THEN 'dead' WHEN i % 1000 < 61 THEN 'ignored' ELSE 'processed' END AS st FROM n)
		INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt,
			max_attempts, next_attempt_at, lease_until)
		SELECT printf('m-%09d', i), o, o, o, 'POST', '', '', r, st, 1, 6,
		       CASE WHEN st IN ('queued', 'failed') THEN r END, CASE WHEN st = 'processing' THEN r END FROM g`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1),
		      g AS (SELECT i, 'org-' || (i % 10) AS o, ?2 - i * ?3 / ?1 AS r, CASE i % 3 WHEN 0 THEN 'stripe' WHEN 1 THEN 'github' ELSE 'slack' END AS p,
		                   CASE WHEN i % 1000 < 2 THEN 'pending' WHEN i % 1000 < 4 THEN 'retrying' WHEN i % 1000 < 9 THEN 'dead'
		                        WHEN i % 1000 < 30 THEN 'no_consumer' ELSE 'delivered' END AS st FROM n)
		INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
			received_at, data, data_truncated, object_ids, state, attempt, max_attempts, next_attempt_at, replay, created_at)
		SELECT printf('e-%09d', i), o, o, printf('m-%09d', i), p, p || '.thing', 'event', 'evt_' || i, r, r, '{}', 0, '[]', st, 1, 6,
		       CASE WHEN st IN ('pending', 'retrying') THEN r END, 0, r FROM g`,
	} {
		if _, err := s.write.ExecContext(ctx, q, n, ts(now), span.Microseconds()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMillion reads the console's Overview (and, for
// comparison, Stats) with 1 000 000 stored messages and events, received
// over 10 days (about 100 000 in the overview's last 24 hours) and, the
// worst case, all within that last day.
//
//	go test -run='^$' -bench=BenchmarkMillion -benchtime=20x ./store/sqlite/
func BenchmarkMillion(b *testing.B) {
	const n = 1_000_000
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	for _, span := range []time.Duration{240 * time.Hour, 24 * time.Hour} {
		b.Run(fmt.Sprintf("span=%s", span), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "intake.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			seedMessages(b, s, n, span, now)
			q := intake.OverviewQuery{Since: now.Truncate(time.Hour).Add(-23 * time.Hour), Hours: 24, Now: now, QueuedBefore: now.Add(-time.Minute)}
			for name, sc := range map[string]intake.Scope{"staff": {}, "org": {OrgID: "org-3"}} {
				b.Run("Overview/"+name, func(b *testing.B) {
					for b.Loop() {
						sum, err := s.Overview(ctx, sc, q)
						if err != nil || len(sum.Hours[23]) == 0 {
							b.Fatalf("overview %+v %v", sum, err)
						}
					}
				})
			}
			b.Run("Stats", func(b *testing.B) {
				for b.Loop() {
					st, err := s.Stats(ctx, now)
					if err != nil || st.Messages[intake.MessageProcessed] == 0 {
						b.Fatalf("stats %+v %v", st.Messages, err)
					}
				}
			})
		})
	}
}

// seedSearchEvents bulk-inserts n events as storetest.BenchmarkSearch
// describes them, then has the indexer index them, in its steps (a few
// hundred rows, each its own commit), as it does events settled one by one.
func seedSearchEvents(b *testing.B, s *Store, n int, span time.Duration, now time.Time) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	if _, err := s.write.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1),
		      g AS (SELECT i, 'org-' || (i % 10) AS o, ?2 - i * ?3 / ?1 AS r, i % ?4 AS c,
		                   CASE i % 3 WHEN 0 THEN ?5 WHEN 1 THEN ?6 ELSE ?7 END AS t,
		                   CASE i % 3 WHEN 0 THEN ?8 WHEN 1 THEN ?9 ELSE ?10 END AS region,
		                   CASE WHEN i % 1000 < 2 THEN 'pending' WHEN i % 1000 < 4 THEN 'retrying' WHEN i % 1000 < 9 THEN 'dead'
		                        WHEN i % 1000 < 30 THEN 'no_consumer' ELSE 'delivered' END AS st FROM n)
		INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
			received_at, data, data_truncated, object_ids, state, attempt, max_attempts, next_attempt_at, replay, created_at)
		SELECT printf('e-%09d', ?1 - i), o, o, printf('m-%09d', ?1 - i), 'stripe', t, 'event', 'evt_' || i, r, r,
		       printf(?11, i, t, r / 1000000, i, c, c, (i * 37) % 100000, i % 50, 1 + i % 3, i, region), 0, '[]', st, 1, 6,
		       CASE WHEN st IN ('pending', 'retrying') THEN r END, 0, r FROM g`,
		n, ts(now), span.Microseconds(), storetest.SearchCustomers, storetest.SearchTypes[0], storetest.SearchTypes[1], storetest.SearchTypes[2],
		storetest.SearchRegions[0], storetest.SearchRegions[1], storetest.SearchRegions[2], storetest.SearchEventTemplate); err != nil {
		b.Fatal(err)
	}
	b.Logf("inserted %d events in %s", n, time.Since(start).Round(time.Second))
	start = time.Now()
	for {
		k, err := s.IndexSearch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	b.Logf("indexed them in %s", time.Since(start).Round(time.Second))
}

// BenchmarkMillionSearch measures searches of 1 000 000 events created over
// 7 days (storetest.BenchmarkSearch), newest 50 first. Seeding takes
// minutes, so it runs only with INTAKE_BENCH_MILLION set:
//
//	INTAKE_BENCH_MILLION=1 go test -run='^$' -bench=BenchmarkMillionSearch -benchtime=200x -timeout=2h ./store/sqlite/
func BenchmarkMillionSearch(b *testing.B) {
	storetest.SkipUnlessMillion(b)
	const n = 1_000_000
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	span := 7 * 24 * time.Hour
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seedSearchEvents(b, s, n, span, now)
	var orgs []string
	for i := range 10 {
		orgs = append(orgs, fmt.Sprint("org-", i))
	}
	storetest.BenchmarkSearch(b, s, orgs, n, now, span)
}

package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/store/storetest"
)

// seedMessages bulk-inserts n messages of 10 orgs received evenly over span
// before now, and as many events, in the proportions of a working
// deployment: nearly all settled, a few per thousand live or dead. Then it
// runs the ANALYZE autovacuum would.
func seedMessages(b testing.TB, s *Store, n int, span time.Duration, now time.Time) []string {
	b.Helper()
	ctx := context.Background()
	var orgs []string
	for i := range 10 {
		orgs = append(orgs, newOrg(b, s, fmt.Sprint("bench", i)).org.ID)
	}
	for _, q := range []string{
		`INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt,
			max_attempts, next_attempt_at, lease_until)
		 SELECT gen_random_uuid(), o, o, o, 'POST', '', '', r, st, 1, 6,
		        CASE WHEN st IN ('queued', 'failed') THEN r END, CASE WHEN st = 'processing' THEN r END
		   FROM (SELECT ($1::uuid[])[1 + i % 10] AS o, $2::timestamptz - (i * $3::bigint / $4) * interval '1 microsecond' AS r,
		                CASE WHEN i % 1000 < 2 THEN 'queued' WHEN i % 1000 < 3 THEN 'processing' WHEN i % 1000 < 6 THEN 'failed'
		                     WHEN i % 1000 < 11 THEN 'dead' WHEN i % 1000 < 61 THEN 'ignored' ELSE 'processed' END AS st
		           FROM generate_series(1, $4) i) g`,
		`INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
			received_at, data, data_truncated, object_ids, state, attempt, max_attempts, next_attempt_at, replay, created_at)
		 SELECT gen_random_uuid(), o, o, gen_random_uuid(), p, p || '.thing', 'event', 'evt_' || i, r, r, '{}', false, '{}', st, 1, 6,
		        CASE WHEN st IN ('pending', 'retrying') THEN r END, false, r
		   FROM (SELECT i, ($1::uuid[])[1 + i % 10] AS o, (ARRAY['stripe', 'github', 'slack'])[1 + i % 3] AS p,
		                $2::timestamptz - (i * $3::bigint / $4) * interval '1 microsecond' AS r,
		                CASE WHEN i % 1000 < 2 THEN 'pending' WHEN i % 1000 < 4 THEN 'retrying' WHEN i % 1000 < 9 THEN 'dead'
		                     WHEN i % 1000 < 30 THEN 'no_consumer' ELSE 'delivered' END AS st
		           FROM generate_series(1, $4) i) g`,
	} {
		if _, err := s.pool.Exec(ctx, q, orgs, ts(now), span.Microseconds(), n); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE messages, events, event_search`); err != nil {
		b.Fatal(err)
	}
	return orgs
}

// BenchmarkMillion reads the console's Overview and the metrics'
// Stats with 1 000 000 stored messages and events, received over 10 days
// (about 100 000 in the overview's last 24 hours) and, the worst case, all
// within that last day.
//
//	go test -run='^$' -bench=BenchmarkMillion -benchtime=20x ./store/postgres/
func BenchmarkMillion(b *testing.B) {
	const n = 1_000_000
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	for _, span := range []time.Duration{240 * time.Hour, 24 * time.Hour} {
		b.Run(fmt.Sprintf("span=%s", span), func(b *testing.B) {
			s := openURL(b, pgtest.Database(b), 4)
			orgs := seedMessages(b, s, n, span, now)
			q := intake.OverviewQuery{Since: now.Truncate(time.Hour).Add(-23 * time.Hour), Hours: 24, Now: now, QueuedBefore: now.Add(-time.Minute)}
			for name, sc := range map[string]intake.Scope{"staff": {}, "org": {OrgID: orgs[3]}} {
				b.Run("Overview/"+name, func(b *testing.B) {
					for b.Loop() {
						sum, err := s.Overview(context.Background(), sc, q)
						if err != nil || len(sum.Hours[23]) == 0 {
							b.Fatalf("overview %+v %v", sum, err)
						}
					}
				})
			}
			b.Run("Stats", func(b *testing.B) {
				for b.Loop() {
					st, err := s.Stats(context.Background(), now)
					if err != nil || st.Messages[intake.MessageProcessed] == 0 {
						b.Fatalf("stats %+v %v", st.Messages, err)
					}
				}
			})
		})
	}
}

// seedSearchEvents bulk-inserts n events of 10 orgs as
// storetest.BenchmarkSearch describes them, their ids ordered by their
// creation as UUIDv7s are, through the search indexes as a settle writes
// them; then it runs the ANALYZE autovacuum would.
func seedSearchEvents(b testing.TB, s *Store, n int, span time.Duration, now time.Time) []string {
	b.Helper()
	ctx := context.Background()
	var orgs []string
	for i := range 10 {
		orgs = append(orgs, newOrg(b, s, fmt.Sprint("search", i)).org.ID)
	}
	start := time.Now()
	if _, err := s.pool.Exec(ctx, `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id,
			occurred_at, received_at, data, data_truncated, object_ids, state, attempt, max_attempts, next_attempt_at, replay, created_at)
		SELECT (lpad(to_hex((extract(epoch FROM r) * 1000)::bigint), 12, '0') || '7' || substr(md5(i::text), 1, 19))::uuid,
		       o, o, gen_random_uuid(), 'stripe', t, 'event', 'evt_' || i, r, r,
		       format($5, i, t, floor(extract(epoch FROM r))::bigint, i, c, c, (i * 37) % 100000, i % 50, 1 + i % 3, i, region)::json,
		       false, '{}', st, 1, 6, CASE WHEN st IN ('pending', 'retrying') THEN r END, false, r
		  FROM (SELECT i, ($1::uuid[])[1 + i % 10] AS o, $2::timestamptz - (i * $3::bigint / $4) * interval '1 microsecond' AS r,
		               i % $6 AS c, ($7::text[])[1 + i % 3] AS t, ($8::text[])[1 + i % 3] AS region,
		               CASE WHEN i % 1000 < 2 THEN 'pending' WHEN i % 1000 < 4 THEN 'retrying' WHEN i % 1000 < 9 THEN 'dead'
		                    WHEN i % 1000 < 30 THEN 'no_consumer' ELSE 'delivered' END AS st
		          FROM generate_series(1, $4) i) g`,
		orgs, ts(now), span.Microseconds(), n, storetest.SearchEventTemplate, storetest.SearchCustomers,
		storetest.SearchTypes, storetest.SearchRegions); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE events, event_search`); err != nil {
		b.Fatal(err)
	}
	b.Logf("inserted and indexed %d events in %s", n, time.Since(start).Round(time.Second))
	return orgs
}

// BenchmarkMillionSearch measures searches of 1 000 000 events created over
// 7 days (storetest.BenchmarkSearch), newest 50 first. Seeding takes
// minutes, so it runs only with INTAKE_BENCH_MILLION set:
//
//	INTAKE_BENCH_MILLION=1 go test -run='^$' -bench=BenchmarkMillionSearch -benchtime=200x -timeout=2h ./store/postgres/
func BenchmarkMillionSearch(b *testing.B) {
	storetest.SkipUnlessMillion(b)
	const n = 1_000_000
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	span := 7 * 24 * time.Hour
	s := openURL(b, pgtest.Database(b), 4)
	orgs := seedSearchEvents(b, s, n, span, now)
	storetest.BenchmarkSearch(b, s, orgs, n, now, span)
}

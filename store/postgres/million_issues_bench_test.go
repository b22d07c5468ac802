package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// BenchmarkMillionIssues reads what opening the overview and the Issues
// pages reads (DESIGN §20), with 1 000 000 messages and events stored (as
// BenchmarkMillion), 20 000 issues over 10 orgs (a quarter open) and
// 1 000 000 issue items (50 an issue, events of its org), and reports each
// read's p95.
//
//	go test -run='^$' -bench=BenchmarkMillionIssues -benchtime=50x ./store/postgres/
func BenchmarkMillionIssues(b *testing.B) {
	const n, issues, items = 1_000_000, 20_000, 50
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	ctx := context.Background()
	s := openURL(b, pgtest.Database(b), 4)
	orgs := seedMessages(b, s, n, 240*time.Hour, now)
	if _, err := s.pool.Exec(ctx, `INSERT INTO issues (id, org_id, kind, status, consumer_id, subject_name, cause, count, events, first_seen_at, last_seen_at,
			opened_at, last_error, updated_at)
		 SELECT gen_random_uuid(), ($1::uuid[])[1 + i % 10], 'delivery', CASE WHEN i % 4 = 0 THEN 'open' ELSE 'resolved' END,
		        gen_random_uuid(), 'consumer ' || i, 'consumer answered 5xx', $2, $2, $3::timestamptz - i * interval '1 second',
		        $3::timestamptz - i * interval '1 millisecond', $3::timestamptz - i * interval '1 second', 'consumer answered 500', $3
		   FROM generate_series(1, $4::int) i`, orgs, items, ts(now), issues); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO issue_events (issue_id, item_id, org_id, at)
		 SELECT i.id, e.id, i.org_id, e.received_at
		   FROM (SELECT id, org_id, row_number() OVER (PARTITION BY org_id ORDER BY id) - 1 AS k FROM issues) i
		   JOIN (SELECT id, org_id, received_at, (row_number() OVER (PARTITION BY org_id ORDER BY id) - 1) / $1 AS k FROM events) e
		     ON e.org_id = i.org_id AND e.k = i.k`, items); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE issues, issue_events`); err != nil {
		b.Fatal(err)
	}
	sc := intake.Scope{OrgID: orgs[4]}
	first, err := s.ListIssues(ctx, sc, intake.IssueQuery{Status: intake.IssueOpen, Limit: 1})
	if err != nil || len(first.Items) != 1 {
		b.Fatalf("issues %+v %v", first, err)
	}
	q := intake.OverviewQuery{Since: now.Truncate(time.Hour).Add(-23 * time.Hour), Hours: 24, Now: now, QueuedBefore: now.Add(-time.Minute)}
	for _, read := range []struct {
		name string
		run  func() error
	}{
		{"Overview", func() error { _, err := s.Overview(ctx, sc, q); return err }},
		{"OpenIssues", func() error {
			p, err := s.ListIssues(ctx, sc, intake.IssueQuery{Status: intake.IssueOpen, Limit: 10})
			if err == nil && len(p.Items) != 10 {
				b.Fatalf("%d open issues listed", len(p.Items))
			}
			return err
		}},
		{"CountOpenIssues", func() error {
			k, err := s.CountOpenIssues(ctx, sc)
			if err == nil && k == 0 {
				b.Fatal("no open issues counted")
			}
			return err
		}},
		{"IssuesPage", func() error { _, err := s.ListIssues(ctx, sc, intake.IssueQuery{Limit: 50}); return err }},
		{"IssueItems", func() error {
			p, err := s.IssueItems(ctx, sc, first.Items[0].ID, intake.IssueItemsQuery{Limit: 50})
			if err == nil && len(p.Items) == 0 {
				b.Fatal("no items")
			}
			return err
		}},
	} {
		b.Run(read.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := read.run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

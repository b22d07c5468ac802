package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// BenchmarkMillionIssues reads what opening the overview and the Issues
// pages reads (DESIGN §20), with 1 000 000 messages and events stored (as
// BenchmarkMillion), 20 000 issues over 10 orgs (a quarter open, 1 000 of them org-4's) and
// 1 000 000 issue items (50 an issue), and reports each read's p95.
//
//	go test -run='^$' -bench=BenchmarkMillionIssues -benchtime=50x ./store/sqlite/
func BenchmarkMillionIssues(b *testing.B) {
	const n, issues, items = 1_000_000, 20_000, 50
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "intake.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seedMessages(b, s, n, 240*time.Hour, now)
	for _, q := range []string{
		`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
		INSERT INTO issues (id, org_id, kind, status, consumer_id, subject_name, cause, count, events, first_seen_at, last_seen_at,
			opened_at, last_error, sample_event_id, updated_at)
		SELECT printf('i-%09d', i), 'org-' || (i % 10), 'delivery', CASE WHEN i % 4 = 0 THEN 'open' ELSE 'resolved' END,
		       printf('c-%06d', i), 'consumer ' || i, 'consumer answered 5xx', ?2, ?2, ?3 - i * 1000000, ?3 - i * 1000,
		       ?3 - i * 1000000, 'consumer answered 500', printf('e-%09d', i), ?3 FROM k`,
		`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 * ?2 - 1)
		INSERT INTO issue_events (issue_id, item_id, org_id, at)
		SELECT printf('i-%09d', i / ?2 + 1), printf('e-%09d', i + 1), 'org-' || ((i / ?2 + 1) % 10), ?3 - i * 1000 FROM k`,
	} {
		if _, err := s.write.ExecContext(ctx, q, issues, items, ts(now)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.write.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	sc := intake.Scope{OrgID: "org-4"}
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
			if err == nil && k != issues/20 {
				b.Fatalf("%d open issues counted", k)
			}
			return err
		}},
		{"IssuesPage", func() error { _, err := s.ListIssues(ctx, sc, intake.IssueQuery{Limit: 50}); return err }},
		{"IssueItems", func() error {
			p, err := s.IssueItems(ctx, sc, first.Items[0].ID, intake.IssueItemsQuery{Limit: 50})
			if err == nil && len(p.Items) != items {
				b.Fatalf("%d items", len(p.Items))
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

package postgres

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestASearchHoldsUnderParallelPlans: with parallel plans as cheap as they
// can be, a match is still judged (intake_jsonb catches what jsonb cannot
// hold in a subtransaction, which no parallel worker may start).
func TestASearchHoldsUnderParallelPlans(t *testing.T) {
	u, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range map[string]string{"parallel_setup_cost": "0", "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0",
		"min_parallel_index_scan_size": "0", "max_parallel_workers_per_gather": "2"} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	s := openURL(t, u.String(), 4)
	now := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	orgs := seedSearchEvents(t, s, 3000, time.Hour, now)
	m, err := intake.ParseMatch(`{"data":{"object":{"customer":"cus_123"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []intake.Scope{{}, {OrgID: orgs[3]}} {
		page, err := s.ListEvents(context.Background(), sc, intake.EventFilter{Search: intake.Search{Match: m}})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("scope %+v: found %d events (%v), want customer 123's one", sc, len(page.Items), err)
		}
	}
}

// TestDataJSONBCannotHoldIsSettledAndFoundByWords: an adapter's data may be
// JSON that jsonb refuses (a \u0000); its event still settles, a match
// cannot find it, q can.
func TestDataJSONBCannotHoldIsSettledAndFoundByWords(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, pgtest.Database(t), 4)
	o := newOrg(t, s, "acme")
	m := o.ingest(t, s, `{"n":1}`)
	claims, err := s.ClaimMessages(ctx, t0, time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims %v %v", claims, err)
	}
	e := o.event(m, "evt_nul")
	e.Data = json.RawMessage(`{"note":"a\u0000b","tag":"zebra"}`)
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed,
		Outcome: intake.OutcomeEvents, ProviderEventID: e.ProviderEventID, Events: []intake.Event{e}}); err != nil {
		t.Fatalf("an event whose data jsonb cannot hold did not settle: %v", err)
	}
	match, _ := intake.ParseMatch(`{"tag":"zebra"}`)
	if page, err := s.ListEvents(ctx, intake.Scope{}, intake.EventFilter{Search: intake.Search{Match: match}}); err != nil || len(page.Items) != 0 {
		t.Fatalf("by match: %d events (%v), want none", len(page.Items), err)
	}
	if page, err := s.ListEvents(ctx, intake.Scope{}, intake.EventFilter{Search: intake.Search{Words: []string{"ZEBRA"}}}); err != nil ||
		len(page.Items) != 1 || page.Items[0].ID != e.ID {
		t.Fatalf("by q: %+v (%v), want the event", page.Items, err)
	}
}

// TestAScopedSearchShowsNoOtherOrgsRowsEvenWhenItsIdsDo: the ids a search
// in an org's scope finds as the owner are read under row-level security,
// so ids of another org's rows (a query that forgot the org) show nothing.
func TestAScopedSearchShowsNoOtherOrgsRowsEvenWhenItsIdsDo(t *testing.T) {
	s := openURL(t, pgtest.Database(t), 4)
	a, b := newOrg(t, s, "a"), newOrg(t, s, "b")
	_, ea := a.processed(t, s, `{"n":1}`)
	_, eb := b.processed(t, s, `{"n":2}`)
	got, err := searchScoped(context.Background(), s, intake.Scope{OrgID: b.org.ID}, `SELECT id FROM events ORDER BY id`, nil,
		`SELECT `+eventColumns+` FROM events WHERE id = ANY($1) ORDER BY id DESC`, func(row pgx.Row) (intake.Event, error) { return scanEvent(row) })
	if err != nil || len(got) != 1 || got[0].ID != eb.ID {
		t.Fatalf("org b's search of every id read %+v (%v); want its own event %s alone, never org a's %s", got, err, eb.ID, ea.ID)
	}
}

// TestTheIndexerRestsWhileThePipelineCommits: with a backlog, the indexer
// steps straight on while the pipeline is quiet and rests eight times a
// step while it commits, so it takes at most a ninth of a connection from
// a busy store; with no backlog it polls.
func TestTheIndexerRestsWhileThePipelineCommits(t *testing.T) {
	for _, c := range []struct {
		n         int
		committed bool
		rest      time.Duration
		poll      bool
	}{
		{n: indexBatch, committed: false, rest: 0},
		{n: indexBatch, committed: true, rest: 80 * time.Millisecond},
		{n: indexBatch - 1, committed: true, poll: true},
		{n: 0, committed: false, poll: true},
	} {
		rest, poll := nextIndexStep(c.n, 10*time.Millisecond, c.committed)
		if rest != c.rest || poll != c.poll {
			t.Errorf("after a 10 ms step of %d bodies, committed %v: rest %v, poll %v; want %v, %v", c.n, c.committed, rest, poll, c.rest, c.poll)
		}
	}
}

// TestThePipelinesCommitsAreCountedForTheIndexer: an ingest's commit moves
// the count the indexer rests by.
func TestThePipelinesCommitsAreCountedForTheIndexer(t *testing.T) {
	s := open(t)
	o := newOrg(t, s, "acme")
	before := s.foreground.Load()
	o.ingest(t, s, `{"n":1}`)
	if s.foreground.Load() == before {
		t.Fatal("an ingest committed without moving the indexer's count of the pipeline's commits")
	}
}

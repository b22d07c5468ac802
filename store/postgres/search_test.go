package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
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
		`SELECT `+eventColumns+` FROM events WHERE id = ANY(`+foundIDs+`) ORDER BY id DESC`, func(row pgx.Row) (intake.Event, error) { return scanEvent(row) })
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

// TestASearchSelectsAndOrdersAsTheEventsListDoes: a search takes its rows'
// org, id, creation and type from event_search (migration 36) and their
// state from events. Over events of two orgs whose ids (and times
// received) and creation times run in different orders, of two types, some
// with a consumer's deliveries and some whose state changed after their
// insert, a search that every event's data satisfies lists, a page at a
// time, and counts what the list without it does, for each filter, in each
// org's scope and staff's.
func TestASearchSelectsAndOrdersAsTheEventsListDoes(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	a, b := newOrg(t, s, "a"), newOrg(t, s, "b")
	consumer := intake.NewID()
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	for i := range 40 {
		o := a
		if i%3 == 0 {
			o = b
		}
		id := intake.NewID()
		if _, err := s.pool.Exec(ctx, `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind,
				provider_event_id, occurred_at, received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
			VALUES ($1, $2, $3, $1, 'stripe', $4, 'event', $5, $6, $6, $7, false, '{}', 'delivered', 1, 6, false, $8)`,
			id, o.org.ID, o.conn.ID, []string{"t.one", "t.two"}[i%2], fmt.Sprint("evt_", i), at(i),
			fmt.Sprintf(`{"n":%d,"tag":"zebra"}`, i), at((i*17)%40)); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := s.pool.Exec(ctx, `INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code,
					latency_us, error, at) VALUES ($1, $2, $3, $4, 1, 'delivered', 200, 1, '', $5)`,
				intake.NewID(), o.org.ID, id, consumer, at(50)); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 {
			if _, err := s.pool.Exec(ctx, `UPDATE events SET state = 'dead' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func(sc intake.Scope, f intake.EventFilter) (ids []string, n int) {
		t.Helper()
		f.Limit = 3
		for {
			page, err := s.ListEvents(ctx, sc, f)
			if err != nil {
				t.Fatalf("events %+v: %v", f, err)
			}
			for _, e := range page.Items {
				ids = append(ids, e.ID)
			}
			if f.Cursor = page.NextCursor; f.Cursor == "" {
				break
			}
		}
		f.Limit = 0
		n, err := s.CountEvents(ctx, sc, f)
		if err != nil {
			t.Fatalf("count %+v: %v", f, err)
		}
		return ids, n
	}
	match, _ := intake.ParseMatch(`{"tag":"zebra"}`)
	for _, sc := range []intake.Scope{{}, {OrgID: a.org.ID}, {OrgID: b.org.ID}} {
		for _, f := range []intake.EventFilter{{}, {Type: "t.two"}, {State: intake.EventDead}, {Since: at(10), Until: at(30)},
			{ConsumerID: consumer}, {Type: "t.one", State: intake.EventDelivered, Since: at(5), ConsumerID: consumer}} {
			want, wantN := list(sc, f)
			if len(want) == 0 || wantN != len(want) {
				t.Fatalf("scope %+v, filter %+v: the list found %d events and counted %d", sc, f, len(want), wantN)
			}
			for _, search := range []intake.Search{{Match: match}, {Words: []string{"ZEBRA"}}, {Match: match, Words: []string{"zebra"}}} {
				f.Search = search
				if got, n := list(sc, f); !slices.Equal(got, want) || n != wantN {
					t.Errorf("scope %+v, filter %+v: the search listed %v and counted %d, the list %v and %d", sc, f, got, n, want, wantN)
				}
			}
		}
	}
}

package postgres

import (
	"context"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/intakehq/intake"
)

// TestSearchFindsWhatWasStoredBeforeItsMigration: a database of the
// version before search (migration 19) holds a message and its event;
// once opened (and migrated), a search in the org's scope finds both.
func TestSearchFindsWhatWasStoredBeforeItsMigration(t *testing.T) {
	ctx := context.Background()
	org, msg, ev := intake.NewID(), intake.NewID(), intake.NewID()
	s := openFromMigration(t, 19,
		row{`INSERT INTO orgs (id, name, created_at) VALUES ($1, 'old', now())`, []any{org}},
		row{`INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
		  VALUES ($1, $2, $2, $2, 'POST', '', 'd', now(), 'processed', 1, 6)`, []any{msg, org}},
		row{`INSERT INTO message_bodies (message_id, org_id, header, body) VALUES ($1, $2, '{}', convert_to('{"note":"refund for Ann"}', 'UTF8'))`,
			[]any{msg, org}},
		row{`INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at, received_at,
			data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
		  VALUES ($1, $2, $2, $3, 'stripe', 't', 'event', 'evt_old', now(), now(), '{"customer":{"id":"cus_old"}}', false, '{}',
			'delivered', 1, 6, false, now())`, []any{ev, org, msg}})
	match, _ := intake.ParseMatch(`{"customer":{"id":"cus_old"}}`)
	events, err := s.ListEvents(ctx, intake.Scope{OrgID: org}, intake.EventFilter{Search: intake.Search{Match: match}})
	if err != nil || len(events.Items) != 1 || events.Items[0].ID != ev {
		t.Fatalf("events by match %+v %v", events.Items, err)
	}
	msgs, err := s.ListMessages(ctx, intake.Scope{OrgID: org}, intake.MessageFilter{Search: intake.Search{Words: []string{"REFUND", "ann"}}})
	if err != nil || len(msgs.Items) != 1 || msgs.Items[0].ID != msg {
		t.Fatalf("messages by words %+v %v", msgs.Items, err)
	}
	var searchable bool
	if err := s.pool.QueryRow(ctx, `SELECT searchable FROM message_bodies WHERE message_id = $1`, msg).Scan(&searchable); err != nil || !searchable {
		t.Fatalf("a body stored before the migration is searchable: %v %v", searchable, err)
	}
}

// oldEvent is how a process of the release before migration 35 inserts an
// event: into events alone.
const oldEvent = `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
	received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
  VALUES ($1, $2, $2, $3, 'stripe', 't', 'event', $4, now(), now(), $5, false, '{}', 'delivered', 1, 6, false, now())`

// TestSearchFindsEventsOfTheReleaseBefore: during a rolling upgrade the
// release before migration 35 writes events into events alone, before the
// migration and while this release serves beside it. A search finds both
// (the migration copies the first, the insert trigger writes the second's
// search row), and an event that release deletes takes its search row.
func TestSearchFindsEventsOfTheReleaseBefore(t *testing.T) {
	ctx := context.Background()
	org, msg, before, during := intake.NewID(), intake.NewID(), intake.NewID(), intake.NewID()
	s := openFromMigration(t, 34,
		row{`INSERT INTO orgs (id, name, created_at) VALUES ($1, 'old', now())`, []any{org}},
		row{`INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
		  VALUES ($1, $2, $2, $2, 'POST', '', 'd', now(), 'processed', 1, 6)`, []any{msg, org}},
		row{oldEvent, []any{before, org, msg, "evt_before", `{"customer":{"id":"cus_old","note":"zebra before"}}`}})
	if _, err := s.pool.Exec(ctx, oldEvent, during, org, msg, "evt_during", `{"customer":{"id":"cus_old","note":"zebra during"}}`); err != nil {
		t.Fatal(err)
	}
	match, _ := intake.ParseMatch(`{"customer":{"id":"cus_old"}}`)
	for _, search := range []intake.Search{{Match: match}, {Words: []string{"ZEBRA"}}} {
		for _, sc := range []intake.Scope{{}, {OrgID: org}} {
			page, err := s.ListEvents(ctx, sc, intake.EventFilter{Search: search})
			if err != nil || len(page.Items) != 2 || page.Items[0].ID != during || page.Items[1].ID != before {
				t.Fatalf("search %+v in scope %+v: %+v %v, want both events", search, sc, page.Items, err)
			}
			if n, err := s.CountEvents(ctx, sc, intake.EventFilter{Search: search}); err != nil || n != 2 {
				t.Fatalf("count of search %+v in scope %+v: %d %v, want 2", search, sc, n, err)
			}
		}
	}
	msgs, err := s.ListMessages(ctx, intake.Scope{OrgID: org}, intake.MessageFilter{Search: intake.Search{Match: match}})
	if err != nil || len(msgs.Items) != 1 || msgs.Items[0].ID != msg {
		t.Fatalf("messages by match %+v %v", msgs.Items, err)
	}

	if _, err := s.pool.Exec(ctx, `DELETE FROM events WHERE id = $1`, during); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, _ := s.pool.Query(ctx, `SELECT event_id::text FROM event_search ORDER BY event_id`)
	if left, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(left) != 1 || left[0] != before {
		t.Fatalf("search rows after a delete: %v %v, want only the kept event's", left, err)
	}
}

// TestEventSearchMigratesDownAndUp: migration 35's Down gives events their
// search indexes back and drops what it made; Up again copies every event.
func TestEventSearchMigratesDownAndUp(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "acme")
	_, e := o.processed(t, s, `{"customer":"cus_1"}`)
	dir, _ := fs.Sub(migrations, "migrations")
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	indexes := func() (names []string) {
		rows, _ := s.pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
			AND indexname IN ('events_data_match', 'events_data_text', 'event_search_match', 'event_search_text') ORDER BY indexname`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	if got := indexes(); !slices.Equal(got, []string{"event_search_match", "event_search_text"}) {
		t.Fatalf("indexes after Up: %v", got)
	}
	if _, err := p.DownTo(ctx, 34); err != nil {
		t.Fatal(err)
	}
	if got := indexes(); !slices.Equal(got, []string{"events_data_match", "events_data_text"}) {
		t.Fatalf("indexes after Down: %v", got)
	}
	if _, err := p.UpTo(ctx, 35); err != nil {
		t.Fatal(err)
	}
	var copied string
	if err := s.pool.QueryRow(ctx, `SELECT event_id::text FROM event_search`).Scan(&copied); err != nil || copied != e.ID {
		t.Fatalf("search row after Up again: %q %v, want the event's", copied, err)
	}
}

// TestSearchRowsOfTheReleasesBeforeAreFilteredByTypeAndTime: migration 36
// gives the search rows written before it their event's creation and type,
// and the insert trigger gives them to the rows of events a process of an
// earlier release inserts after it; a row left without its event (by
// migration 35's copy) is deleted. A search filtered by type and time finds
// both events. Down and up again, the rows are filled once more.
func TestSearchRowsOfTheReleasesBeforeAreFilteredByTypeAndTime(t *testing.T) {
	ctx := context.Background()
	org, msg, before, during, orphan := intake.NewID(), intake.NewID(), intake.NewID(), intake.NewID(), intake.NewID()
	s := openFromMigration(t, 35,
		row{`INSERT INTO orgs (id, name, created_at) VALUES ($1, 'old', now())`, []any{org}},
		row{oldEvent, []any{before, org, msg, "evt_before", `{"customer":{"id":"cus_old"}}`}},
		row{`INSERT INTO event_search (event_id, org_id, data) VALUES ($1, $2, '{"customer":{"id":"cus_old"}}')`, []any{orphan, org}})
	if _, err := s.pool.Exec(ctx, oldEvent, during, org, msg, "evt_during", `{"customer":{"id":"cus_old"}}`); err != nil {
		t.Fatal(err)
	}
	match, _ := intake.ParseMatch(`{"customer":{"id":"cus_old"}}`)
	found := func(when string) {
		t.Helper()
		for _, sc := range []intake.Scope{{}, {OrgID: org}} {
			f := intake.EventFilter{Type: "t", Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), Search: intake.Search{Match: match}}
			page, err := s.ListEvents(ctx, sc, f)
			if err != nil || len(page.Items) != 2 || page.Items[0].ID != during || page.Items[1].ID != before {
				t.Fatalf("%s, search in scope %+v: %+v %v, want both events", when, sc, page.Items, err)
			}
			if n, err := s.CountEvents(ctx, sc, f); err != nil || n != 2 {
				t.Fatalf("%s, count in scope %+v: %d %v, want 2", when, sc, n, err)
			}
		}
		var rows, same int
		if err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE s.created_at = e.created_at AND s.type = e.type)
			FROM event_search s LEFT JOIN events e ON e.id = s.event_id`).Scan(&rows, &same); err != nil || rows != 2 || same != 2 {
			t.Fatalf("%s: %d search rows, %d with their event's creation and type (%v), want 2 and 2", when, rows, same, err)
		}
	}
	found("migrated")

	dir, _ := fs.Sub(migrations, "migrations")
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 35); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE events SET created_at = created_at - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 36); err != nil {
		t.Fatal(err)
	}
	found("down and up again")
}

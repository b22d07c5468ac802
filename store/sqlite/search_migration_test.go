package sqlite

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// TestSearchFindsWhatWasStoredBeforeItsMigration: a database of the
// version before search (migration 21) holds a message and its event;
// once opened (and migrated), a search finds both, before the indexer has
// run and after.
func TestSearchFindsWhatWasStoredBeforeItsMigration(t *testing.T) {
	ctx := context.Background()
	s := openFromMigration(t, 21,
		row{sql: `INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
		 VALUES ('m-old', 'o', 'c', 'e', 'POST', '', 'd', 1, 'processed', 1, 6)`},
		row{sql: `INSERT INTO message_bodies (message_id, header, body) VALUES ('m-old', '{}', CAST('{"note":"refund for Ann"}' AS BLOB))`},
		row{sql: `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at, received_at,
			data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
		 VALUES ('e-old', 'o', 'c', 'm-old', 'stripe', 't', 'event', 'evt_old', 1, 1, '{"customer":{"id":"cus_old"}}', 0, '[]',
			'delivered', 1, 6, 0, 1)`},
	)
	match, _ := intake.ParseMatch(`{"customer":{"id":"cus_old"}}`)
	check := func(when string) {
		t.Helper()
		events, err := s.ListEvents(ctx, intake.Scope{OrgID: "o"}, intake.EventFilter{Search: intake.Search{Match: match}})
		if err != nil || len(events.Items) != 1 || events.Items[0].ID != "e-old" {
			t.Fatalf("%s: events by match %+v %v", when, events.Items, err)
		}
		msgs, err := s.ListMessages(ctx, intake.Scope{OrgID: "o"}, intake.MessageFilter{Search: intake.Search{Words: []string{"REFUND", "ann"}}})
		if err != nil || len(msgs.Items) != 1 || msgs.Items[0].ID != "m-old" {
			t.Fatalf("%s: messages by words %+v %v", when, msgs.Items, err)
		}
	}
	check("before the indexer")
	if _, err := s.IndexSearch(ctx); err != nil {
		t.Fatal(err)
	}
	var events, bodies int64
	if err := s.read.QueryRowContext(ctx, `SELECT (SELECT seq FROM search_progress WHERE name = 'events'),
		(SELECT seq FROM search_progress WHERE name = 'messages')`).Scan(&events, &bodies); err != nil || events != 1 || bodies != 1 {
		t.Fatalf("the indexer's progress: %d events, %d bodies (%v); want the row of each stored before", events, bodies, err)
	}
	check("indexed")
}

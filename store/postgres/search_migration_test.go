package postgres

import (
	"context"
	"testing"

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

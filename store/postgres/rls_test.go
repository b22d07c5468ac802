package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/intakehq/intake"
)

// orgColumn names each org-owned table's org column.
var orgColumn = map[string]string{
	"orgs": "id", "connections": "org_id", "endpoints": "org_id", "messages": "org_id", "message_bodies": "org_id",
	"message_identities": "org_id", "events": "org_id", "consumers": "org_id", "subject_links": "org_id", "deliveries": "org_id",
	"audit_log": "org_id", "api_keys": "org_id", "replay_jobs": "org_id", "message_attempts": "org_id",
	"console_sessions": "org_id", "consumer_lanes": "org_id", "routes": "org_id", "notices": "org_id",
	"notification_settings": "org_id", "event_types": "org_id", "event_type_hours": "org_id", "event_type_changes": "org_id",
	"blob_deletes": "org_id", "issues": "org_id", "issue_events": "org_id",
	"event_search": "org_id",
}

// appendOnly tables grant an org no UPDATE or DELETE at all.
var appendOnly = map[string]bool{"audit_log": true}

// seedEveryTable gives o a row in every org-owned table.
func seedEveryTable(t *testing.T, s *Store, o org) {
	t.Helper()
	ctx := context.Background()
	_, e := o.processed(t, s, `{"org":"`+o.org.ID+`"}`)
	claims, err := s.ClaimEvents(ctx, t0, time.Minute, 1)
	if err != nil || len(claims) != 1 || claims[0].Event.ID != e.ID {
		t.Fatalf("event claims %+v %v", claims, err)
	}
	consumer := intake.Consumer{ID: intake.NewID(), OrgID: o.org.ID, Name: "c", App: "app", URL: "http://127.0.0.1:9/",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("s"), CreatedAt: t0}
	if err := s.CreateConsumer(ctx, consumer); err != nil {
		t.Fatal(err)
	}
	out, err := s.FanOut(ctx, t0, intake.FanOut{EventID: e.ID, Attempt: claims[0].Attempt, Lease: time.Minute,
		Routes: []intake.FanOutRoute{{ConsumerID: consumer.ID}}})
	routes := out.Calls
	if err != nil || len(routes) != 1 {
		t.Fatalf("fan-out leased %+v %v", routes, err)
	}
	// A failed call opens the consumer's issue, with the event as its item.
	if _, err := s.SettleRoute(ctx, t0, intake.RouteSettlement{EventID: e.ID, ConsumerID: consumer.ID, Attempt: routes[0].Attempt, Called: true,
		Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID, EventID: e.ID, ConsumerID: consumer.ID, Attempt: 1,
			Outcome: intake.DeliveryRetry, StatusCode: 500, Error: "consumer answered 500", At: t0}}, intake.DefaultBackoff); err != nil {
		t.Fatal(err)
	}
	// The objects of deleted bodies are recorded as their bodies go.
	if _, err := s.pool.Exec(ctx, `INSERT INTO blob_deletes (key, org_id) VALUES ($1, $2)`,
		intake.BlobKey(t0, intake.NewID()), o.org.ID); err != nil {
		t.Fatal(err)
	}
	// Notices and notification settings have their writers elsewhere.
	if _, err := s.pool.Exec(ctx, `INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES ($1, $2, 'event.dead', $3, 'd', $4)`,
		intake.NewID(), o.org.ID, consumer.ID, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO notification_settings (org_id, url, topics, sealed_secret, updated_at)
		VALUES ($1, 'https://hooks.example/', '{event.dead}', 's', $2)`, o.org.ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSubjectLink(ctx, intake.Scope{OrgID: o.org.ID}, intake.SubjectLink{ID: intake.NewID(), ConnectionID: o.conn.ID,
		ProviderObjectID: "in_1", App: "app", RecordID: "r1", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordAudit(ctx, intake.AuditEntry{ID: intake.NewID(), OrgID: o.org.ID, Actor: "staff", Action: "consumer.create",
		TargetType: "consumer", TargetID: consumer.ID, At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateReplayJob(ctx, intake.ReplayJob{ID: intake.NewID(), OrgID: o.org.ID, EndpointID: o.ep.ID,
		Since: t0.Add(-time.Hour), Until: t0, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, intake.ConsoleSession{IDHash: []byte("session-" + o.org.ID), OrgID: o.org.ID,
		KeyHash: []byte("key-" + o.org.ID), Actor: "key:ik_test…", CSRF: "csrf", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertNotice(ctx, intake.Notice{ID: intake.NewID(), OrgID: o.org.ID, Topic: intake.NoticeStorageQuota,
		Subject: "storage", Detail: "d", At: t0}); err != nil {
		t.Fatal(err)
	}
	// The catalog's learner writes a type, its hours and a change.
	key := intake.EventTypeKey{ConnectionID: o.conn.ID, Type: "stripe.invoice.paid"}
	if stale, err := s.RecordEventTypes(ctx, []intake.EventTypeUpdate{{OrgID: o.org.ID, EventTypeKey: key, Count: 1, First: t0, Last: t0,
		Hours: map[time.Time]int64{t0.Truncate(time.Hour): 1}, Learnt: true, Schema: []byte(`{"type":"object"}`), Example: []byte(`{}`),
		ExampleEventID: e.ID, Changes: []intake.EventTypeChange{{ID: intake.NewID(), At: t0, Path: "$.a", Change: intake.ChangeAdded,
			To: []string{"string"}, ExampleEventID: e.ID}}}}); err != nil || len(stale) != 0 {
		t.Fatalf("event type: stale %v, %v", stale, err)
	}
	// The store's own writer, in the org's scope, over the row above.
	if err := s.PutNotificationSettings(ctx, intake.Scope{OrgID: o.org.ID}, intake.NotificationSettings{OrgID: o.org.ID,
		Topics: []string{intake.NoticeStorageQuota}, SealedSecret: []byte("s"), UpdatedAt: t0, Version: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestOrgScopedTransactionSeesNoOtherOrgsRows runs SQL that forgets the org
// filter inside the transaction an org's API request gets, and finds that
// row-level security still confines it to that org, for reads and writes,
// in every org-owned table.
func TestOrgScopedTransactionSeesNoOtherOrgsRows(t *testing.T) {
	ctx := context.Background()
	// One connection, so the scoped transactions and the staff reads below
	// share it: a scope must not outlive its transaction.
	s := openURL(t, open(t).pool.Config().ConnString(), 1)
	a, b := newOrg(t, s, "a"), newOrg(t, s, "b")
	seedEveryTable(t, s, a)
	seedEveryTable(t, s, b)
	scopeB := intake.Scope{OrgID: b.org.ID}

	for table, col := range orgColumn {
		var all, ofA int
		if err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE `+col+` = $1) FROM `+table, a.org.ID).Scan(&all, &ofA); err != nil {
			t.Fatal(err)
		}
		if ofA == 0 || all <= ofA {
			t.Fatalf("%s: staff sees %d rows, %d of org a; the seed should give both orgs rows", table, all, ofA)
		}

		var seen, seenOfA int
		var current string
		if err := s.scopedTx(ctx, scopeB, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE `+col+` = $1), current_user FROM `+table, a.org.ID).
				Scan(&seen, &seenOfA, &current)
		}); err != nil {
			t.Fatal(err)
		}
		if seenOfA != 0 || seen != all-ofA || current != "intake_tenant" {
			t.Errorf("%s: org b's transaction (as %s) sees %d rows, %d of them org a's; want %d and 0", table, current, seen, seenOfA, all-ofA)
		}
		// The same through the one-round-trip reads the API's lists use.
		if err := s.read(ctx, scopeB, func(b *pgx.Batch) {
			b.Queue(`SELECT count(*), count(*) FILTER (WHERE `+col+` = $1) FROM `+table, a.org.ID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&seen, &seenOfA) })
		}); err != nil {
			t.Fatal(err)
		}
		if seenOfA != 0 || seen != all-ofA {
			t.Errorf("%s: org b's read sees %d rows, %d of them org a's; want %d and 0", table, seen, seenOfA, all-ofA)
		}

		if appendOnly[table] {
			continue // org b may not update or delete even its own rows
		}
		var updated int64
		if err := s.scopedTx(ctx, scopeB, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE `+table+` SET `+col+` = `+col)
			updated = tag.RowsAffected()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if updated != int64(all-ofA) {
			t.Errorf("%s: org b's unfiltered UPDATE touched %d rows, want its own %d", table, updated, all-ofA)
		}
		var deleted int64
		if err := s.scopedTx(ctx, scopeB, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE `+col+` = $1`, a.org.ID)
			deleted = tag.RowsAffected()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if deleted != 0 {
			t.Errorf("%s: org b deleted %d of org a's rows", table, deleted)
		}
	}

	// The audit log is append-only for an org.
	err := s.scopedTx(ctx, scopeB, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM audit_log`)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("org b deleted from the audit log: %v", err)
	}

	// Writing a row into another org breaks the policy.
	err = s.scopedTx(ctx, scopeB, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO consumers (id, org_id, name, app, url, event_types, completion, enabled, sealed_secret, created_at)
			VALUES ($1, $2, 'x', 'x', 'http://x/', '{}', false, true, 'x', now())`, intake.NewID(), a.org.ID)
		return err
	})
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("org b inserted a consumer into org a: %v", err)
	}

	// A scoped read that fails leaves its transaction open and aborted; that
	// connection is not reused.
	if err := s.read(ctx, scopeB, func(b *pgx.Batch) { b.Queue(`SELECT 1/0`) }); err == nil {
		t.Fatal("division by zero succeeded")
	}

	// The scope ended with its transaction: on the same pool of one
	// connection, staff sees every org again.
	if orgs, err := s.ListOrgs(ctx, intake.Scope{}); err != nil || len(orgs) != 2 {
		t.Fatalf("staff after scoped transactions lists %d orgs (%v)", len(orgs), err)
	}
}

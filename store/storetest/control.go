package storetest

import (
	"context"
	"net/http"
	"testing"

	"github.com/intakehq/intake"
)

// testAuditCommitsWithItsAction: an operator write and its audit entry
// commit together or not at all. An entry that cannot be written (its id
// is taken) undoes the action it records.
func testAuditCommitsWithItsAction(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	entry := func(action, target string) intake.AuditEntry {
		return intake.AuditEntry{ID: intake.NewID(), OrgID: f.org.ID, Actor: "staff", Action: action, TargetType: "consumer",
			TargetID: target, At: t0}
	}
	c := intake.Consumer{ID: intake.NewID(), OrgID: f.org.ID, Name: "app", App: "app", URL: "http://127.0.0.1:1/hook",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte{1}, CreatedAt: t0}
	first := entry("consumer.create", c.ID)
	if err := s.CreateConsumer(ctx, c, first); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListAudit(ctx, intake.Scope{OrgID: f.org.ID}, intake.AuditFilter{})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != first.ID || page.Items[0].TargetID != c.ID {
		t.Fatalf("audit after create = %+v %v", page.Items, err)
	}

	// The same audit id again: the entry fails, and so does the action.
	dup := first
	dup.Action = "consumer.update"
	off := c
	off.Enabled = false
	if err := s.UpdateConsumer(ctx, intake.Scope{OrgID: f.org.ID}, off, dup); err == nil {
		t.Fatal("a write whose audit entry failed succeeded")
	}
	if got, err := s.Consumer(ctx, intake.Scope{}, c.ID); err != nil || !got.Enabled {
		t.Fatalf("consumer after a failed audited update: enabled %v, %v; want the update undone", got.Enabled, err)
	}
	other := intake.Consumer{ID: intake.NewID(), OrgID: f.org.ID, Name: "b", App: "b", URL: "http://127.0.0.1:1/b",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte{1}, CreatedAt: t0}
	if err := s.CreateConsumer(ctx, other, first); err == nil {
		t.Fatal("a create whose audit entry failed succeeded")
	}
	if _, err := s.Consumer(ctx, intake.Scope{}, other.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("consumer of a failed audited create: %v, want not found", err)
	}
	ep := f.ep
	ep.Enabled = false
	if err := s.UpdateEndpoint(ctx, intake.Scope{}, ep, first); err == nil {
		t.Fatal("an endpoint update whose audit entry failed succeeded")
	}
	if got, _ := s.Endpoint(ctx, intake.Scope{}, ep.ID); !got.Enabled {
		t.Fatal("endpoint disabled though its audit entry failed")
	}
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteEndpoint, ep.ID, t0, first); err == nil {
		t.Fatal("a delete whose audit entry failed succeeded")
	}
	if _, err := s.Endpoint(ctx, intake.Scope{}, ep.ID); err != nil {
		t.Fatalf("endpoint deleted though its audit entry failed: %v", err)
	}
	if page, _ := s.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{}); len(page.Items) != 1 {
		t.Fatalf("%d audit entries, want the one that committed with its action", len(page.Items))
	}
}

// testReplayRecords: a replay is queued and claimable, or, when the
// original's body expired, dead with body_expired and never claimed;
// anything else is refused.
func testReplayRecords(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	orig := f.ingest(t, s, `{"id":"evt_1"}`, t0)
	claimOne(t, s, t0)

	queued := f.message(`{"id":"evt_1"}`, t0)
	queued.ReplayOf = orig.ID
	a := intake.AuditEntry{ID: intake.NewID(), OrgID: f.org.ID, Actor: "staff", Action: "message.replay", TargetType: "message",
		TargetID: orig.ID, At: t0}
	if err := s.InsertReplay(ctx, queued, a); err != nil {
		t.Fatal(err)
	}
	dead := f.message("", t0)
	dead.ReplayOf, dead.State, dead.BodyExpired, dead.Body = orig.ID, intake.MessageDead, true, nil
	dead.ErrorCode, dead.NextAttemptAt = intake.ErrCodeBodyExpired, t0.Add(-1)
	if err := s.InsertReplay(ctx, dead); err != nil {
		t.Fatal(err)
	}
	claims := claimAll(t, s, t0.Add(1))
	if len(claims) != 1 || claims[0].Message.ID != queued.ID || string(claims[0].Message.Body) != `{"id":"evt_1"}` {
		t.Fatalf("claimed %d replays, want only the queued one with its body", len(claims))
	}
	if m, err := s.Message(ctx, intake.Scope{}, dead.ID); err != nil || m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeBodyExpired {
		t.Fatalf("expired replay = %+v %v", m, err)
	}
	if page, _ := s.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{}); len(page.Items) != 1 || page.Items[0].ID != a.ID {
		t.Fatalf("audit = %+v, want the replay's entry", page.Items)
	}
	for name, m := range map[string]*intake.Message{
		"no replay_of": f.message("x", t0),
		"dead without body_expired": func() *intake.Message {
			m := f.message("x", t0)
			m.ReplayOf, m.State = orig.ID, intake.MessageDead
			return m
		}(),
		"processed": func() *intake.Message {
			m := f.message("x", t0)
			m.ReplayOf, m.State = orig.ID, intake.MessageProcessed
			return m
		}(),
	} {
		if err := s.InsertReplay(ctx, m); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("replay %s: %v, want invalid", name, err)
		}
	}
}

// testMessageRequests: the rules' view of the requests events came from,
// read for many messages at once; a message without its body has no
// headers, an unknown one is left out.
func testMessageRequests(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	a := f.message(`{"a":1}`, t0)
	a.Query, a.Header = "env=prod", http.Header{"X-Github-Event": {"push"}}
	if err := s.Ingest(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := f.ingest(t, s, `{"b":1}`, t0)
	got, err := s.MessageRequests(ctx, []string{a.ID, b.ID, intake.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[a.ID].Query != "env=prod" || got[a.ID].Header.Get("X-Github-Event") != "push" ||
		got[b.ID].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("requests = %+v", got)
	}
	if none, err := s.MessageRequests(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %v %v", none, err)
	}
}

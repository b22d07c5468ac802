package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

func TestAConnectionFilterDropsEventsBeforeTheyAreCreated(t *testing.T) {
	e := setup(t)
	e.conn.Filter = `event.type == "worker-test.paid" && event.data.amount >= 100`
	if err := e.store.UpdateConnection(context.Background(), intake.Scope{}, e.conn); err != nil {
		t.Fatal(err)
	}
	kept := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","amount":250}`)
	small := e.receive(t, "new-secret", `{"id":"evt_2","type":"paid","amount":5}`)
	other := e.receive(t, "new-secret", `{"id":"evt_3","type":"refunded","amount":250}`)
	e.run(t)
	if m := e.message(t, kept); m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeEvents || len(m.EventIDs) != 1 {
		t.Fatalf("kept message = %+v", m)
	}
	for _, id := range []string{small, other} {
		m := e.message(t, id)
		if m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeFiltered || len(m.EventIDs) != 0 {
			t.Fatalf("filtered message = %+v: want processed, outcome filtered, no events", m)
		}
	}
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{})
	if len(page.Items) != 1 {
		t.Fatalf("%d events created, want the one the filter kept", len(page.Items))
	}
}

// scripted is a connection of provider none described by an interpret
// script, with an endpoint, in e's org.
func (e *env) scripted(t *testing.T, script string) (intake.Connection, intake.Endpoint) {
	t.Helper()
	cfg, _ := json.Marshal(map[string]string{"script": script})
	c := intake.Connection{ID: intake.NewID(), OrgID: e.conn.OrgID, Provider: "none", Name: "shop", Config: cfg, CreatedAt: e.clock.Now()}
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: c.OrgID, ConnectionID: c.ID, TokenHash: []byte(c.ID), Enabled: true,
		MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	if err := e.store.CreateConnection(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	return c, ep
}

func (e *env) receiveAt(t *testing.T, c intake.Connection, ep intake.Endpoint, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: c.OrgID, ConnectionID: c.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Shop-Topic": {"orders/paid"}}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: e.clock.Now(), State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func TestAnInterpretScriptDescribesAProviderAndItsIdsDeduplicate(t *testing.T) {
	e := setup(t)
	c, ep := e.scripted(t, `function interpret(request) {
		var o = request.json.order;
		return [{id: "ord_" + o.id + "_" + o.status, type: "shop.order." + request.headers["x-shop-topic"].split("/")[1],
		         occurred_at: o.at, data: o, object_ids: [o.id]}];
	}`)
	body := `{"order":{"id":"o1","status":"paid","at":"2026-11-30T11:00:00Z","total":42}}`
	first := e.receiveAt(t, c, ep, body)
	e.run(t)
	m := e.message(t, first)
	if m.State != intake.MessageProcessed || len(m.EventIDs) != 1 || m.ProviderEventID != "ord_o1_paid" {
		t.Fatalf("message = %+v", m)
	}
	ev, err := e.store.Event(context.Background(), intake.Scope{}, m.EventIDs[0])
	var data map[string]any
	json.Unmarshal(ev.Data, &data)
	if err != nil || ev.Type != "shop.order.paid" || ev.ProviderEventID != "ord_o1_paid" || data["total"] != 42.0 || data["id"] != "o1" ||
		ev.OccurredAt.Format("15:04") != "11:00" || len(ev.ObjectIDs) != 1 || ev.ObjectIDs[0] != "o1" {
		t.Fatalf("event = %+v %v", ev, err)
	}
	again := e.receiveAt(t, c, ep, body)
	e.run(t)
	if m := e.message(t, again); m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeDuplicate {
		t.Fatalf("the same order again = %+v, want ignored duplicate", m)
	}
}

func TestAFailingInterpretScriptMakesTheMessageDead(t *testing.T) {
	e := setup(t)
	c, ep := e.scripted(t, `function interpret(request) { return [{type: "x", data: request.json.missing.field}] }`)
	id := e.receiveAt(t, c, ep, `{}`)
	e.run(t)
	if m := e.message(t, id); m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeScript || m.ErrorMessage == "" {
		t.Fatalf("message = %+v, want dead with error code script", m)
	}
}

func TestABodyTooLargeForItsInterpretScriptMakesTheMessageDeadUnread(t *testing.T) {
	e := setup(t)
	c, ep := e.scripted(t, `function interpret(request) { return [{type: "seen", data: request.body.length}]; }`)
	id := e.receiveAt(t, c, ep, `"`+strings.Repeat("x", 3<<20)+`"`)
	e.run(t)
	m := e.message(t, id)
	if m.State != intake.MessageDead || m.ErrorCode+": "+m.ErrorMessage != "script: body too large" {
		t.Fatalf("message = %s %s: %s, want dead with script: body too large", m.State, m.ErrorCode, m.ErrorMessage)
	}
}

func TestAMessageNamingMoreThanAThousandEventsIsDead(t *testing.T) {
	e := setup(t)
	c, ep := e.scripted(t, `function interpret(request) {
		var out = [];
		for (var i = 0; i < 50000; i++) out.push({type: "x"});
		return out;
	}`)
	scripted := e.receiveAt(t, c, ep, `{}`)
	adapted := e.receive(t, "new-secret", `{"id":"evt_many","type":"paid","many":1001}`)
	e.run(t)
	for name, id := range map[string]string{"script": scripted, "adapter": adapted} {
		if m := e.message(t, id); m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeTooManyEvents || len(m.EventIDs) != 0 {
			t.Errorf("%s: message = %s %s: %s, %d events; want dead with too_many_events", name, m.State, m.ErrorCode, m.ErrorMessage, len(m.EventIDs))
		}
	}
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{})
	if len(page.Items) != 0 {
		t.Fatalf("%d events created", len(page.Items))
	}
}

package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

func TestAConnectionsFilterIsTriedAndSavedFromItsPage(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	m := e.send(acme, "invoice.paid")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/connections/" + acme.conn.ID)
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, `id="rules-form"`) || strings.Contains(p.body, `id="script"`) {
		t.Fatal("a stripe connection's page has no filter editor, or offers an interpret script")
	}
	target := "event:" + m.EventIDs[0]
	p = b.post("/console/connections/"+acme.conn.ID+"/test", url.Values{"csrf": {b.csrf()}, "filter": {`event.type == "stripe.invoice.paid"`}, "target": {target}})
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, `id="test-results"`) || !strings.Contains(p.body, "true") {
		t.Fatalf("the test result is missing:\n%s", p.body)
	}
	p = b.post("/console/connections/"+acme.conn.ID+"/rules", url.Values{"csrf": {b.csrf()}, "filter": {`event.type ==`}})
	wantStatus(t, p, http.StatusBadRequest)
	if !strings.Contains(p.body, "line 1, column") {
		t.Fatalf("a bad filter's page does not name the position:\n%s", p.body)
	}
	p = b.post("/console/connections/"+acme.conn.ID+"/rules", url.Values{"csrf": {b.csrf()}, "filter": {`event.type != "stripe.charge.succeeded"`}})
	wantStatus(t, p, http.StatusSeeOther)
	cn, err := e.store.Connection(context.Background(), intake.Scope{}, acme.conn.ID)
	if err != nil || cn.Filter != `event.type != "stripe.charge.succeeded"` {
		t.Fatalf("saved filter %q, %v", cn.Filter, err)
	}
	// The next charge is dropped by the filter before it becomes an event.
	if m := e.send(acme, "charge.succeeded"); m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeFiltered || len(m.EventIDs) != 0 {
		t.Fatalf("the filtered webhook settled %+v", m)
	}
}

package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/catalog"
)

// learn has the event-type catalog learn from a message's events, as the
// worker's learner does after their settle.
func (e *env) learn(m intake.Message) {
	e.t.Helper()
	l := catalog.New(catalog.Config{Store: e.store})
	for _, id := range m.EventIDs {
		ev, err := e.store.Event(context.Background(), intake.Scope{}, id)
		if err != nil {
			e.t.Fatal(err)
		}
		l.Observe([]intake.Event{ev})
	}
	if err := l.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func TestEventTypesPagesListTypesAndShowTheSchemaAsATreeToDownload(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.tenant("acme"), e.tenant("globex")
	e.learn(e.send(acme, "invoice.paid"))

	b := e.browser()
	b.signIn(acme.org.APIKey)
	list := b.get("/console/event-types")
	detail := "/console/event-types/" + acme.conn.ID + "/stripe.invoice.paid"
	if list.status != 200 || !strings.Contains(list.body, `href="`+detail+`"`) || !strings.Contains(list.body, "acme live") ||
		!strings.Contains(list.body, `href="/console/event-types" class="on"`) {
		t.Fatalf("the list page: %d %s", list.status, list.body)
	}
	p := b.get(detail)
	if p.status != 200 || !strings.Contains(p.body, `id="schema-tree"`) || !strings.Contains(p.body, `<span class="field mono">data</span>`) ||
		!strings.Contains(p.body, `<span class="tag">required</span>`) || !strings.Contains(p.body, `id="example"`) ||
		!strings.Contains(p.body, "None: every event so far had the shape of the first.") {
		t.Fatalf("the type's page: %d %s", p.status, p.body)
	}
	dl := b.get(detail + "?download=schema")
	if dl.status != 200 || dl.header.Get("Content-Type") != "application/schema+json" ||
		!strings.Contains(dl.header.Get("Content-Disposition"), `filename="stripe.invoice.paid.schema.json"`) ||
		!strings.Contains(dl.body, `"$schema":"https://json-schema.org/draft/2020-12/schema"`) {
		t.Fatalf("the download: %d %v %s", dl.status, dl.header, dl.body)
	}

	other := e.browser()
	other.signIn(globex.org.APIKey)
	if p := other.get(detail); p.status != 404 {
		t.Fatalf("another org reads acme's type: %d", p.status)
	}
	if p := other.get("/console/event-types?connection=" + url.QueryEscape(acme.conn.ID)); p.status != 200 || strings.Contains(p.body, "stripe.invoice.paid") {
		t.Fatalf("another org lists acme's types: %d", p.status)
	}
}

package console_test

import (
	"context"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/console"
	"github.com/intakehq/intake/control"
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

// countingStore counts the reads a page makes of messages and events.
type countingStore struct {
	intake.Store
	overviews, counts, lists int
}

func (s *countingStore) Overview(ctx context.Context, sc intake.Scope, q intake.OverviewQuery) (intake.Overview, error) {
	s.overviews++
	return s.Store.Overview(ctx, sc, q)
}

func (s *countingStore) CountMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (int, error) {
	s.counts++
	return s.Store.CountMessages(ctx, sc, f)
}

func (s *countingStore) ListMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (intake.Page[intake.Message], error) {
	s.lists++
	return s.Store.ListMessages(ctx, sc, f)
}

func (s *countingStore) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	s.lists++
	return s.Store.ListEvents(ctx, sc, f)
}

// TestTheOverviewIsOneReadOfTheStore: the overview used to count messages
// once per hour and state (35 to 155 counts a load); it is one Overview
// read now, whatever the traffic.
func TestTheOverviewIsOneReadOfTheStore(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	for _, typ := range []string{"invoice.paid", "charge.succeeded", "invoice.paid"} {
		e.send(acme, typ)
	}
	counting := &countingStore{Store: e.store}
	srv := httptest.NewServer(console.New(console.Config{Control: control.New(control.Config{Store: counting, Sealer: e.sealer,
		StaffToken: staffToken, PublicURL: e.url, Rules: e.rules}), PublicURL: e.url}).Handler())
	defer srv.Close()
	b := e.browser()
	b.base = srv.URL
	b.signIn(staffToken)
	counting.overviews, counting.counts, counting.lists = 0, 0, 0
	p := b.get("/console/")
	wantStatus(t, p, http.StatusOK)
	if counting.overviews != 1 || counting.counts != 0 || counting.lists != 0 {
		t.Fatalf("the overview made %d overview reads, %d counts and %d lists; want one overview read", counting.overviews, counting.counts, counting.lists)
	}
}

func TestAnEndpointNamedInTheConsoleShowsItsName(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.post("/console/endpoints", url.Values{"csrf": {b.csrf()}, "connection": {acme.conn.ID}, "name": {"backup"}})
	wantStatus(t, p, http.StatusOK)
	eps, _ := e.store.ListEndpoints(context.Background(), intake.Scope{OrgID: acme.org.ID})
	named := 0
	for _, ep := range eps {
		if ep.Name == "backup" {
			named++
		}
	}
	if named != 1 || !strings.Contains(b.get("/console/endpoints").body, "<td>backup</td>") {
		t.Fatalf("%d endpoints named backup, or the list does not show the name", named)
	}
	p = b.post("/console/endpoints", url.Values{"csrf": {b.csrf()}, "connection": {acme.conn.ID}, "name": {"backup"}})
	wantStatus(t, p, http.StatusConflict)
}

// A refused save answers the page again: the edit in the editor, and the
// checker's diagnostics under the rule at fault, a line each.
func TestARefusedRuleIsShownUnderItsEditorWithTheEditKept(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	ctx := context.Background()
	cs := intake.Consumer{ID: intake.NewID(), OrgID: acme.org.ID, Name: "billing", App: "billing", URL: "http://127.0.0.1:9/",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte{1}, CreatedAt: time.Now(), Filter: `event.type == "a"`}
	if err := e.store.CreateConsumer(ctx, cs); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(acme.org.APIKey)
	const transform = "function transform(event) {\n  return null;\n}"
	for _, tc := range []struct {
		filter, transform, rule string
		lines                   []string
	}{
		{`event.type`, transform, "filter",
			[]string{`filter must return a bool, not string: event.type; compare it, e.g. event.type == &#34;value&#34;`}},
		{`event.type ==`, transform, "filter",
			[]string{`filter does not compile: line 1, column 14: Syntax error:`, ` | event.type ==`, ` | .............^`}},
		{`event.type == "b"`, "function transform(event) { return {body: }", "transform", []string{"transform"}},
	} {
		p := b.post("/console/consumers/"+cs.ID+"/rules", url.Values{"csrf": {b.csrf()}, "filter": {tc.filter}, "transform": {tc.transform}})
		wantStatus(t, p, http.StatusBadRequest)
		if !strings.Contains(p.body, `id="rules-form"`) {
			t.Fatalf("a refused %s answered another page than the consumer's:\n%s", tc.rule, p.body)
		}
		if !strings.Contains(p.body, ">"+template.HTMLEscapeString(tc.filter)+"</textarea>") ||
			!strings.Contains(p.body, ">"+template.HTMLEscapeString(tc.transform)+"</textarea>") {
			t.Fatalf("the edit is not in the editor after a refused %s:\n%s", tc.rule, p.body)
		}
		if !strings.Contains(p.body, `aria-describedby="`+tc.rule+`-errors"`) || !strings.Contains(p.body, `id="`+tc.rule+`-errors"`) {
			t.Fatalf("the diagnostics are not tied to the %s's editor:\n%s", tc.rule, p.body)
		}
		for _, line := range tc.lines {
			if !strings.Contains(p.body, `<span class="line">`+line) {
				t.Errorf("the page lacks the diagnostic line %q:\n%s", line, p.body)
			}
		}
	}
	if got, _ := e.store.Consumer(ctx, intake.Scope{}, cs.ID); got.Filter != `event.type == "a"` || got.Transform != "" {
		t.Fatalf("refused saves changed the rules to %q, %q", got.Filter, got.Transform)
	}
	// A connection's page too.
	p := b.post("/console/connections/"+acme.conn.ID+"/rules", url.Values{"csrf": {b.csrf()}, "filter": {`event.id`}})
	wantStatus(t, p, http.StatusBadRequest)
	if !strings.Contains(p.body, ">event.id</textarea>") || !strings.Contains(p.body, `<span class="line">filter must return a bool, not string: event.id`) {
		t.Fatalf("the connection's page after a refused filter:\n%s", p.body)
	}
}

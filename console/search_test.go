package console_test

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// TestEventsAndMessagesPagesSearchKeepTheQueryAndActOnWhatTheyFind: the
// search box is a GET form whose query stays in the URL (and its pages'
// links); a malformed match is the page again, 400, with why; the buttons
// on a result replay and re-route what the search selects, and say how
// many.
func TestEventsAndMessagesPagesSearchKeepTheQueryAndActOnWhatTheyFind(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	a, other := e.send(acme, "invoice.paid"), e.send(acme, "invoice.paid")
	b := e.browser()
	b.signIn(acme.org.APIKey)

	match := `{"id":"` + a.ProviderEventID + `","data":{"object":{"currency":"usd"}}}`
	p := b.get("/console/events?match=" + url.QueryEscape(match))
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, a.EventIDs[0]) || strings.Contains(p.body, other.EventIDs[0]) {
		t.Fatalf("the events this match finds:\n%s", p.body)
	}
	if !strings.Contains(p.body, `name="match" value="`+template.HTMLEscapeString(match)+`"`) {
		t.Fatalf("the search box lost the match:\n%s", p.body)
	}
	if strings.Contains(p.body, `id="reroute-search"`) {
		t.Fatal("a re-route is offered for a result of a pending event alone")
	}

	bad := `{"id":"` + a.ProviderEventID
	p = b.get("/console/events?match=" + url.QueryEscape(bad))
	wantStatus(t, p, http.StatusBadRequest)
	if !strings.Contains(p.body, `id="search-error"`) || !strings.Contains(p.body, "match must be a JSON object") ||
		!strings.Contains(p.body, `value="`+template.HTMLEscapeString(bad)+`"`) || strings.Contains(p.body, a.EventIDs[0]) {
		t.Fatalf("a malformed match: the page should say why and keep the form:\n%s", p.body)
	}
	p = b.get("/console/messages?match=" + url.QueryEscape(bad))
	wantStatus(t, p, http.StatusBadRequest)
	if !strings.Contains(p.body, "match must be a JSON object") {
		t.Fatalf("a malformed match on the messages page:\n%s", p.body)
	}

	p = b.get("/console/messages?q=" + url.QueryEscape(strings.ToUpper(a.ProviderEventID)))
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, a.ID) || strings.Contains(p.body, other.ID) || !strings.Contains(p.body, "Replay the message this search finds") {
		t.Fatalf("the messages whose body holds the word:\n%s", p.body)
	}
	csrf := b.csrf()
	p = b.post("/console/messages/replay", url.Values{"csrf": {csrf}, "q": {a.ProviderEventID}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.Contains(loc, "flash=replayed-search") || !strings.Contains(loc, "n=1") ||
		!strings.Contains(loc, "q="+a.ProviderEventID) {
		t.Fatalf("bulk replay: %d %q", p.status, loc)
	}
	replays := 0
	for _, m := range e.messages(acme) {
		if m.ReplayOf != "" {
			replays++
			if m.ReplayOf != a.ID {
				t.Fatalf("replayed %s, which the search did not find", m.ReplayOf)
			}
		}
	}
	if replays != 1 || !strings.Contains(b.get(loc).body, "Replayed 1 messages this search selects") {
		t.Fatalf("%d replays, or no notice", replays)
	}

	deadEvent(t, e, a.EventIDs[0])
	p = b.get("/console/events?match=" + url.QueryEscape(match))
	if !strings.Contains(p.body, `id="reroute-search"`) {
		t.Fatalf("no re-route offered for a dead event found:\n%s", p.body)
	}
	p = b.post("/console/events/reroute", url.Values{"csrf": {csrf}, "match": {match}})
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || !strings.Contains(loc, "flash=rerouted-search") || !strings.Contains(loc, "n=1") {
		t.Fatalf("bulk re-route: %d %q", p.status, loc)
	}
	if ev, _ := e.store.Event(context.Background(), intake.Scope{}, a.EventIDs[0]); ev.State != intake.EventPending {
		t.Fatalf("the event found is %s, want pending", ev.State)
	}
	audit, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: acme.org.ID}, intake.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, entry := range audit.Items {
		if (entry.Action == "message.replay" && strings.Contains(entry.Detail, "q=")) || (entry.Action == "event.reroute" && strings.Contains(entry.Detail, "match=")) {
			named++
		}
	}
	if named != 2 {
		t.Fatalf("%d audit entries name the search, want the replay's and the re-route's: %+v", named, audit.Items)
	}
}

func TestABulkReplayPastTheBulkMaxRunsAsAJobWhosePageShowsItsProgress(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	for range 3 {
		e.send(acme, "invoice.paid")
	}
	e.withBulkMax(2)
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.get("/console/messages?q=invoice")
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, "the 3 messages this search finds as a paced job") || !strings.Contains(p.body, `name="confirm" value="true"`) {
		t.Fatalf("a replay past the bulk maximum is not offered as a job:\n%s", p.body)
	}
	p = b.post("/console/messages/replay", url.Values{"csrf": {b.csrf()}, "q": {"invoice"}, "confirm": {"true"}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/jobs/") {
		t.Fatalf("a confirmed replay past the bulk maximum: %d %q", p.status, loc)
	}
	p = b.get(loc)
	wantStatus(t, p, http.StatusOK)
	if !strings.Contains(p.body, "Bulk replay") || !strings.Contains(p.body, "running") || !strings.Contains(p.body, "0 of 3") {
		t.Fatalf("the job's page before a runner:\n%s", p.body)
	}
	if ran, err := e.control().Runner(nil).RunOnce(context.Background()); !ran || err != nil {
		t.Fatalf("runner: ran %v, %v", ran, err)
	}
	if p = b.get(loc); !strings.Contains(p.body, "done") || !strings.Contains(p.body, "3 of 3") {
		t.Fatalf("the job's page after its runner:\n%s", p.body)
	}
	// Without the confirmation the same search is refused and replays nothing.
	p = b.post("/console/messages/replay", url.Values{"csrf": {b.csrf()}, "q": {"invoice"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "confirm") {
		t.Fatalf("an unconfirmed replay past the bulk maximum: %d\n%s", p.status, p.body)
	}
}

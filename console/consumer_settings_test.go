package console_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestConsumerPageEditsNameURLAndEventTypesOverTheVersionShown(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	c := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{Name: "orders", App: "shop",
		URL: "http://127.0.0.1:9/orders", EventTypes: []string{"stripe.*"}})
	b := e.browser()
	b.signIn(acme.org.APIKey)
	csrf := b.csrf()
	p := b.get("/console/consumers/" + c.ID)
	for _, want := range []string{`id="settings-form"`, `id="consumer-name" value="orders"`, `id="consumer-url" class="mono" value="http://127.0.0.1:9/orders"`,
		`id="consumer-event-types" class="mono" value="stripe.*"`, `name="version" value="1"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("the consumer page lacks %s", want)
		}
	}

	p = b.post("/console/consumers/"+c.ID+"/settings", url.Values{"csrf": {csrf}, "version": {"1"}, "name": {"invoices"},
		"url": {" http://127.0.0.1:9/invoices "}, "event_types": {"stripe.invoice.*, github.push"}})
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "flash=consumer-saved") {
		t.Fatalf("saving the settings: %d %q", p.status, p.header.Get("Location"))
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Name != "invoices" || stored.URL != "http://127.0.0.1:9/invoices" || strings.Join(stored.EventTypes, " ") != "stripe.invoice.* github.push" {
		t.Fatalf("stored after the form: %+v", stored)
	}
	if p = b.get(p.header.Get("Location")); !strings.Contains(p.body, "Consumer saved") || !strings.Contains(p.body, `value="stripe.invoice.*, github.push"`) {
		t.Fatal("the page after saving shows no notice or not the new event types")
	}

	// Over the version shown before that save: refused, the entry kept and
	// why shown beside the form; nothing changes.
	p = b.post("/console/consumers/"+c.ID+"/settings", url.Values{"csrf": {csrf}, "version": {"1"}, "name": {"stale"},
		"url": {"http://127.0.0.1:9/stale"}, "event_types": {"*"}})
	wantStatus(t, p, http.StatusPreconditionFailed)
	body := html.UnescapeString(p.body)
	if !strings.Contains(body, `id="settings-error">the consumer changed since version 1`) || !strings.Contains(body, `value="http://127.0.0.1:9/stale"`) ||
		!strings.Contains(body, `name="version" value="2"`) {
		t.Fatalf("a stale save's page: %.2000s", body)
	}
	// A refused address: the same.
	p = b.post("/console/consumers/"+c.ID+"/settings", url.Values{"csrf": {csrf}, "version": {"2"}, "name": {"invoices"},
		"url": {"http://169.254.169.254/latest"}, "event_types": {"stripe.invoice.*"}})
	wantStatus(t, p, http.StatusBadRequest)
	body = html.UnescapeString(p.body)
	if !strings.Contains(body, "refused by the consumer address policy") || !strings.Contains(body, `value="http://169.254.169.254/latest"`) {
		t.Fatalf("a refused address's page: %.2000s", body)
	}
	if after, _ := e.store.Consumer(context.Background(), intake.Scope{}, c.ID); after.URL != stored.URL || after.Name != "invoices" || after.Version != 2 {
		t.Fatalf("a refused save changed the consumer: %+v", after)
	}
}

// A refused controls form is answered with the page, what was entered in
// the form and why beside it; nothing is saved.
func TestRefusedControlsKeepTheEditAndSayWhy(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	c := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{Name: "orders", App: "shop",
		URL: "http://127.0.0.1:9/orders", EventTypes: []string{"stripe.*"}})
	b := e.browser()
	b.signIn(acme.org.APIKey)
	for _, bad := range []struct{ field, value, why string }{
		{"ordering", "event.data.(", "ordering"},
		{"max_in_flight", "-3", "max_in_flight"},
		{"rate_per_sec", "fast", "rate_per_sec must be a number"},
	} {
		form := url.Values{"csrf": {b.csrf()}, "rate_per_sec": {"12.5"}, "max_in_flight": {"4"}, "ordering": {"subject"},
			"retry_attempts": {"9"}, "retry_base": {"20s"}, "breaker_failures": {"7"}, "auto_disable_after": {"48h"}}
		form.Set(bad.field, bad.value)
		p := b.post("/console/consumers/"+c.ID+"/controls", form)
		body := html.UnescapeString(p.body)
		if p.status != http.StatusBadRequest || !strings.Contains(body, `id="controls-error"`) || !strings.Contains(body, bad.why) {
			t.Fatalf("%s=%s: %d, want 400 with the page and why (%q)", bad.field, bad.value, p.status, bad.why)
		}
		for name, v := range form {
			if name == "csrf" {
				continue
			}
			if !strings.Contains(body, `name="`+name+`"`) || !strings.Contains(body, `value="`+v[0]+`"`) {
				t.Errorf("%s=%s: the page does not keep %s=%q", bad.field, bad.value, name, v[0])
			}
		}
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil || stored.Controls != (intake.Controls{}) {
		t.Fatalf("a refused form saved controls: %+v %v", stored.Controls, err)
	}
}

// The consumer page's test button delivers a test event and shows what
// the consumer said.
func TestTheConsumerPageSendsATestEventAndShowsTheAnswer(t *testing.T) {
	got := make(chan string, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
		w.WriteHeader(http.StatusAccepted)
	}))
	defer app.Close()
	e := newEnv(t)
	acme := e.tenant("acme")
	c := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{Name: "orders", App: "shop",
		URL: app.URL + "/hooks", EventTypes: []string{"stripe.*"}})
	b := e.browser()
	b.signIn(acme.org.APIKey)
	p := b.post("/console/consumers/"+c.ID+"/send-test", url.Values{"csrf": {b.csrf()}})
	id := <-got
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="test-result"`) || !strings.Contains(p.body, "<code>"+id+"</code>") ||
		!strings.Contains(p.body, ">handled<") || !strings.Contains(p.body, "HTTP 202") {
		t.Fatalf("test: %d\n%s", p.status, p.body)
	}
}

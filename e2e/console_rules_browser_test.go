package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleInBrowserAddsRulesTestsThemAndTheNextWebhookArrivesReshaped:
// from the console alone, an operator writes a filter and a transform on a
// consumer's page, tries both against a stored event, saves them, and the
// next webhooks arrive filtered and reshaped.
func TestConsoleInBrowserAddsRulesTestsThemAndTheNextWebhookArrivesReshaped(t *testing.T) {
	bodies := make(chan []byte, 8)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
	}))
	defer consumer.Close()

	// A generous time limit: these tests are about what rules do, not
	// their limits, and CI machines are loaded.
	s := start(t, t.TempDir(), "--script-timeout", "2s")
	acme := setupStripeOrg(t, s, "acme")
	var cons struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": acme.id, "name": "chat", "app": "chat", "url": consumer.URL,
		"event_types": []string{"stripe.*"}}, &cons)
	postStripe(t, s, acme, "invoice.paid")
	<-bodies // the first event arrives as the envelope, before any rule

	tab := browserTab(t)
	signIn(t, tab, s.url, acme.key, "header.top")
	step(t, tab, "open the consumer from the list",
		chromedp.Navigate(s.url+"/console/consumers"),
		chromedp.Click(chromedp.CSS(`#consumers tr[data-id="`+cons.ID+`"] a`)),
		chromedp.WaitVisible(chromedp.ID("rules-form")),
	)
	// A filter that is not a bool is refused: the page comes back with the
	// edit kept and the diagnostic under the filter.
	step(t, tab, "save a filter that returns a string",
		chromedp.SendKeys(chromedp.ID("filter"), `event.type`),
		chromedp.SendKeys(chromedp.ID("transform"), `function transform(event) { return null }`),
		chromedp.Click(chromedp.ID("save-rules")),
		chromedp.WaitVisible(chromedp.ID("filter-errors")),
	)
	if d := read(t, tab, "diagnostics", chromedp.Text(chromedp.ID("filter-errors"))); !strings.Contains(d,
		`filter must return a bool, not string: event.type; compare it, e.g. event.type == "value"`) {
		t.Fatalf("the diagnostics under the filter read:\n%s", d)
	}
	if f := read(t, tab, "filter box", chromedp.Value(chromedp.ID("filter"))); f != "event.type" {
		t.Fatalf("after the refused save the filter box holds %q", f)
	}
	if f := read(t, tab, "transform box", chromedp.Value(chromedp.ID("transform"))); f != `function transform(event) { return null }` {
		t.Fatalf("after the refused save the transform box holds %q", f)
	}
	var saved struct{ Filter string }
	if s.api(t, "GET", "/api/v1/consumers/"+cons.ID, nil, &saved); saved.Filter != "" {
		t.Fatalf("the refused filter was saved: %q", saved.Filter)
	}
	step(t, tab, "write the rules and test them",
		chromedp.Clear(chromedp.ID("filter")),
		chromedp.Clear(chromedp.ID("transform")),
		chromedp.SendKeys(chromedp.ID("filter"), `event.type == "stripe.invoice.paid" && event.data.data.object.object == "invoice"`),
		chromedp.SendKeys(chromedp.ID("transform"), `function transform(event, context) { return {body: {text: "Paid: " + event.data.data.object.id, kind: event.type}} }`),
		chromedp.Click(chromedp.ID("test-rules")),
		chromedp.WaitVisible(chromedp.ID("test-results")),
	)
	results := read(t, tab, "results", chromedp.Text(chromedp.ID("test-results")))
	if !strings.Contains(results, "filter") || !strings.Contains(results, "true") || !strings.Contains(results, `"text": "Paid: in_`) ||
		!strings.Contains(results, " ms") {
		t.Fatalf("the test result reads:\n%s", results)
	}
	// The editor keeps what was tried, not yet saved.
	if f := read(t, tab, "filter box", chromedp.Value(chromedp.ID("filter"))); !strings.Contains(f, "stripe.invoice.paid") {
		t.Fatalf("after the test the filter box holds %q", f)
	}
	step(t, tab, "save", chromedp.Click(chromedp.ID("save-rules")), chromedp.WaitVisible(chromedp.CSS("p.flash")))

	postStripe(t, s, acme, "charge.succeeded")
	postStripe(t, s, acme, "invoice.paid")
	var got []byte
	select {
	case got = <-bodies:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer never got the reshaped event")
	}
	var body struct{ Text, Kind string }
	if err := json.Unmarshal(got, &body); err != nil || !strings.HasPrefix(body.Text, "Paid: in_") || body.Kind != "stripe.invoice.paid" {
		t.Fatalf("the consumer got %s, want the transform's body", got)
	}
	var evs struct{ Items []struct{ Type string } }
	eventually(t, 30*time.Second, "the charge event settles filtered", func() bool {
		s.api(t, "GET", "/api/v1/events?state=filtered", nil, &evs)
		return len(evs.Items) == 1 && evs.Items[0].Type == "stripe.charge.succeeded"
	})
	select {
	case b := <-bodies:
		t.Fatalf("the consumer got an event its filter declines: %s", b)
	default:
	}
}

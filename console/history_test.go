package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// failedOnce fans the tenant's one event out to the consumer and settles
// its call as failed with latency, due again in an hour; it returns the
// event's id.
func (e *env) failedOnce(t *testing.T, tn tenant, consumerID string, latency time.Duration) string {
	t.Helper()
	e.send(tn, "invoice.paid")
	ctx, now := context.Background(), time.Now()
	claims, err := e.store.ClaimEvents(ctx, now, time.Minute, 10)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claimed %+v %v", claims, err)
	}
	if _, err := e.store.FanOut(ctx, now, intake.FanOut{EventID: claims[0].Event.ID, Attempt: claims[0].Attempt,
		Routes: []intake.FanOutRoute{{ConsumerID: consumerID}}}); err != nil {
		t.Fatal(err)
	}
	calls, err := e.store.ClaimRoutes(ctx, now, time.Minute, intake.Calls(10))
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls %+v %v", calls, err)
	}
	c := calls[0]
	d := intake.Delivery{ID: intake.NewID(), OrgID: tn.org.ID, EventID: c.Event.ID, ConsumerID: consumerID, Attempt: c.Attempt,
		Outcome: intake.DeliveryRetry, StatusCode: 503, Latency: latency, Error: "503 Service Unavailable", At: now}
	if _, err := e.store.SettleRoute(ctx, now, intake.RouteSettlement{EventID: c.Event.ID, ConsumerID: consumerID, Attempt: c.Attempt,
		Delivery: &d, Called: true}, intake.Backoff{Base: time.Hour, Max: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return c.Event.ID
}

// A consumer's page charts its calls and their latency per hour and per
// day as inline SVG, and lists its last deliveries with their events.
func TestAConsumersPageChartsItsHistoryAndListsItsLastDeliveries(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	cs := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{
		Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"*"}})
	ev := e.failedOnce(t, acme, cs.ID, 42*time.Millisecond)
	b := e.browser()
	b.signIn(acme.org.APIKey)
	page := b.get("/console/consumers/" + cs.ID).body
	hour := time.Now().UTC().Truncate(time.Hour)
	span := hour.Format("15:04") + "–" + hour.Add(time.Hour).Format("15:04") + " UTC"
	for _, want := range []string{
		`aria-label="Calls delivered and failed per hour over the last 24 hours"`,
		`aria-label="p50 and p99 latency per hour over the last 24 hours"`,
		`aria-label="Calls delivered and failed per day over the last 7 days"`,
		`aria-label="p50 and p99 latency per day over the last 7 days"`,
		`<rect class="dead"`, "<title>" + span + ": 1 failed</title>",
		`<circle class="p99"`, "<title>" + span + ": p99 42 ms</title>",
		`id="consumer-deliveries"`, `href="/console/events/` + ev + `"`, "503 Service Unavailable",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the consumer's page lacks %s:\n%s", want, section(page, `id="history"`))
		}
	}
	if n := strings.Count(page, "<svg class=\"chart\""); n != 4 {
		t.Errorf("%d charts on the consumer's page, want 4", n)
	}
}

// An operator sees Retry now on an event with a waiting route and on its
// consumer's page, and the retry makes the route due at once; a viewer
// sees neither button and is refused the action.
func TestRetryNowIsAnOperatorsButtonOnTheEventAndTheConsumer(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	cs := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{
		Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"*"}})
	ev := e.failedOnce(t, acme, cs.ID, time.Millisecond)
	keys := map[intake.Role]string{}
	for _, r := range []intake.Role{intake.RoleViewer, intake.RoleOperator} {
		keys[r] = apiCall[api.APIKey](e, acme.org.APIKey, "POST", "/api/v1/keys", api.CreateKeyRequest{Role: string(r)}).Key
	}
	for _, role := range []intake.Role{intake.RoleViewer, intake.RoleOperator} {
		b := e.browser()
		b.signIn(keys[role])
		for _, path := range []string{"/console/events/" + ev, "/console/consumers/" + cs.ID} {
			p := b.get(path)
			wantStatus(t, p, http.StatusOK)
			if shown := strings.Contains(p.body, `id="retry-now"`); shown != (role == intake.RoleOperator) {
				t.Errorf("a %s on %s: Retry now shown %v", role, path, shown)
			}
		}
		if role == intake.RoleViewer {
			p := b.post("/console/events/"+ev+"/retry", url.Values{"csrf": {b.csrf()}})
			wantStatus(t, p, http.StatusForbidden)
			continue
		}
		p := b.post("/console/events/"+ev+"/retry", url.Values{"csrf": {b.csrf()}})
		wantStatus(t, p, http.StatusSeeOther)
		p = b.get(p.header.Get("Location"))
		if !strings.Contains(p.body, "Retry now: 1 event made due") {
			t.Errorf("after the retry the event's page says:\n%s", section(p.body, `class="flash`))
		}
		due, err := e.store.ClaimRoutes(context.Background(), time.Now(), time.Minute, intake.Calls(10))
		if err != nil || len(due) != 1 || due[0].Event.ID != ev {
			t.Fatalf("after the retry %+v are due, %v; want the event's route", due, err)
		}
	}
}

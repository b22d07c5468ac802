package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestEventDetailListsEveryDeliveryAttemptOldestFirst(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	fast := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("fast", "apitest.*"))
	flaky := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("flaky", "apitest.*"))
	ev := e.event(acme, "apitest.thing.happened")

	first := e.clock.Now()
	e.route(ev, intake.EventRetrying,
		intake.Delivery{ConsumerID: fast.ID, Outcome: intake.DeliveryHandled, StatusCode: 204, Latency: 1500 * time.Microsecond, At: first},
		intake.Delivery{ConsumerID: flaky.ID, Outcome: intake.DeliveryRetry, StatusCode: 503, Latency: 40 * time.Millisecond, Error: "answered 503", At: first,
			Response: &intake.DeliveryResponse{Status: 503, Headers: map[string]string{"content-type": "application/json"}, Body: `{"error":"boom"}`, BodyEncoding: "text"}})
	e.clock.Advance(10 * time.Second)
	second := e.clock.Now()
	e.route(ev, intake.EventDelivered,
		intake.Delivery{ConsumerID: flaky.ID, Outcome: intake.DeliveryIgnored, StatusCode: 200, Latency: 2 * time.Millisecond, At: second})

	got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil)
	want := []api.Delivery{
		{ConsumerID: fast.ID, Attempt: 1, Outcome: "handled", StatusCode: 204, LatencyMS: 1.5, At: first},
		{ConsumerID: flaky.ID, Attempt: 1, Outcome: "retry", StatusCode: 503, LatencyMS: 40, Error: "answered 503", At: first},
		{ConsumerID: flaky.ID, Attempt: 2, Outcome: "ignored", StatusCode: 200, LatencyMS: 2, At: second},
	}
	if got.State != "delivered" || got.Attempt != 2 || len(got.Deliveries) != len(want) {
		t.Fatalf("event: %+v", got)
	}
	for i, d := range got.Deliveries {
		if d.ConsumerID != want[i].ConsumerID || d.Attempt != want[i].Attempt || d.Outcome != want[i].Outcome ||
			d.StatusCode != want[i].StatusCode || d.LatencyMS != want[i].LatencyMS || d.Error != want[i].Error || !d.At.Equal(want[i].At) {
			t.Errorf("delivery %d = %+v, want %+v", i, d, want[i])
		}
	}
	// The consumer's answer is on its delivery; none where none was kept.
	if r := got.Deliveries[1].Response; r == nil || r.Status != 503 || r.Body != `{"error":"boom"}` || r.BodyEncoding != "text" || r.BodyTruncated ||
		len(r.Headers) != 1 || r.Headers["content-type"] != "application/json" {
		t.Errorf("the failed delivery's answer %+v", r)
	}
	if got.Deliveries[0].Response != nil {
		t.Errorf("a delivery without an answer kept %+v", got.Deliveries[0].Response)
	}
	raw := e.do("GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil).Body.String()
	if !strings.Contains(raw, `"response":{"status":503,"headers":{"content-type":"application/json"},"body":"{\"error\":\"boom\"}","body_encoding":"text","body_truncated":false}`) ||
		!strings.Contains(raw, `"response":null`) {
		t.Errorf("event detail %s, want each delivery's response", raw)
	}
	wantError(t, e.do("GET", "/api/v1/events/"+ev.ID, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")

	// Lists do not carry deliveries: an empty list there would read as "none".
	list := e.do("GET", "/api/v1/events", acme.org.APIKey, nil)
	if list.Code != 200 || !strings.Contains(list.Body.String(), ev.ID) || strings.Contains(list.Body.String(), "deliveries") {
		t.Fatalf("events list: %d %s", list.Code, list.Body)
	}
}

func TestEventAttemptsCountTowardEachConsumersOwnLimitAndADeadEventNamesItsConsumer(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	fast := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("fast", "apitest.*"))
	flaky := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("flaky", "apitest.*"))
	must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+flaky.ID, acme.org.APIKey, `{"retry": {"attempts": 1}}`)
	ev := e.event(acme, "apitest.thing.happened")
	e.route(ev, intake.EventDead,
		intake.Delivery{ConsumerID: fast.ID, Outcome: intake.DeliveryHandled, StatusCode: 204},
		intake.Delivery{ConsumerID: flaky.ID, Outcome: intake.DeliveryRetry, StatusCode: 503, Error: "answered 503"})

	got := must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil)
	routes := map[string]api.EventRoute{}
	for _, r := range got.Routes {
		routes[r.ConsumerName] = r
	}
	if r := routes["fast"]; len(got.Routes) != 2 || r.ConsumerID != fast.ID || r.State != "handled" || r.Attempt != 1 || r.MaxAttempts != intake.DefaultMaxAttempts {
		t.Fatalf("routes %+v", got.Routes)
	}
	if r := routes["flaky"]; r.State != "dead" || r.Attempt != 1 || r.MaxAttempts != 1 || r.LastError != "answered 503" {
		t.Fatalf("flaky's route %+v", r)
	}
	for _, d := range got.Deliveries {
		if d.ConsumerID == flaky.ID && (d.ConsumerName != "flaky" || d.Attempt != 1 || d.MaxAttempts != 1 || d.Outcome != "dead") {
			t.Errorf("flaky's delivery %+v, want attempt 1 of 1, dead", d)
		}
		if d.ConsumerID == fast.ID && (d.ConsumerName != "fast" || d.MaxAttempts != intake.DefaultMaxAttempts || d.Outcome != "handled") {
			t.Errorf("fast's delivery %+v", d)
		}
	}

	// Raising the consumer's retry afterwards rewrites nothing: the dead
	// event reads 1 of 1 in its detail and in the dead list alike.
	must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+flaky.ID, acme.org.APIKey, `{"retry": {"attempts": 6}}`)
	got = must[api.EventDetail](e, 200, "GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil)
	for _, d := range got.Deliveries {
		if d.ConsumerID == flaky.ID && d.MaxAttempts != 1 {
			t.Errorf("after the retry was raised flaky's delivery reads %d of %d, want 1 of 1", d.Attempt, d.MaxAttempts)
		}
	}
	for _, r := range got.Routes {
		if r.ConsumerID == flaky.ID && r.MaxAttempts != 1 {
			t.Errorf("after the retry was raised flaky's dead route reads %d of %d, want 1 of 1", r.Attempt, r.MaxAttempts)
		}
	}
	dead := must[api.List[api.Event]](e, 200, "GET", "/api/v1/events?state=dead", acme.org.APIKey, nil).Items
	if len(dead) != 1 || len(dead[0].DeadRoutes) != 1 {
		t.Fatalf("dead events %+v", dead)
	}
	if r := dead[0].DeadRoutes[0]; r.ConsumerID != flaky.ID || r.ConsumerName != "flaky" || r.LastError != "answered 503" || r.MaxAttempts != 1 {
		t.Fatalf("dead route %+v", r)
	}
}

func TestEventDetailOfAnUnroutedEventHasAnEmptyDeliveryList(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ev := e.event(acme, "apitest.thing.happened")
	rec := e.do("GET", "/api/v1/events/"+ev.ID, acme.org.APIKey, nil)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || string(raw["deliveries"]) != "[]" {
		t.Fatalf("deliveries = %s (%v): %s", raw["deliveries"], err, rec.Body)
	}
}

func TestEventListFiltersByState(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	unclaimed := e.event(acme, "apitest.thing.happened")
	e.route(unclaimed, intake.EventNoConsumer)
	pending := e.event(acme, "apitest.thing.happened")
	for state, id := range map[string]string{"no_consumer": unclaimed.ID, "pending": pending.ID} {
		got := must[api.List[api.Event]](e, 200, "GET", "/api/v1/events?state="+state, acme.org.APIKey, nil).Items
		if len(got) != 1 || got[0].ID != id || got[0].State != state {
			t.Errorf("state=%s: %+v", state, got)
		}
	}
	wantError(t, e.do("GET", "/api/v1/events?state=unclaimed", acme.org.APIKey, nil), 400, intake.EINVALID,
		"state must be one of pending, delivered, retrying, dead, no_consumer")
}

func TestUnclaimedIsStaffOnlyAndListsNoConsumerEventsOfEveryOrg(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	a := e.event(acme, "apitest.a")
	e.route(a, intake.EventNoConsumer)
	g := e.event(globex, "apitest.g")
	e.route(g, intake.EventNoConsumer)
	e.event(acme, "apitest.pending") // routed later, not unclaimed

	wantError(t, e.do("GET", "/api/v1/unclaimed", acme.org.APIKey, nil), 403, intake.EFORBIDDEN, "staff")

	page := must[api.List[api.Event]](e, 200, "GET", "/api/v1/unclaimed?limit=1", staffToken, nil)
	if len(page.Items) != 1 || page.Items[0].ID != g.ID || page.Items[0].OrgID != globex.org.ID || page.Items[0].State != "no_consumer" ||
		page.Items[0].Type != "apitest.g" || page.NextCursor != g.ID {
		t.Fatalf("first page: %+v", page)
	}
	page = must[api.List[api.Event]](e, 200, "GET", "/api/v1/unclaimed?cursor="+page.NextCursor, staffToken, nil)
	if len(page.Items) != 1 || page.Items[0].ID != a.ID || page.Items[0].OrgID != acme.org.ID || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}
	wantError(t, e.do("GET", "/api/v1/unclaimed?limit=0", staffToken, nil), 400, intake.EINVALID, "limit must be")
}

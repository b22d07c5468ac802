package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/rules"
)

// withRules gives a consumer a filter and a transform.
func (e *env) withRules(t *testing.T, c intake.Consumer, filter, transform string) {
	t.Helper()
	c, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	c.Filter, c.Transform = filter, transform
	if err := e.store.UpdateConsumer(context.Background(), intake.Scope{}, c); err != nil {
		t.Fatal(err)
	}
}

func TestAConsumerWhoseFilterDeclinesIsRecordedFilteredAndCalledNever(t *testing.T) {
	e := setup(t)
	takes, takesURL := newRecorder(t, 200)
	declines, declinesURL := newRecorder(t, 200)
	a, _ := e.consumer(t, "billing", takesURL, false, "stripe.*")
	b, _ := e.consumer(t, "ledger", declinesURL, false, "stripe.*")
	e.withRules(t, a, `event.type.startsWith("stripe.invoice.") && !event.replay`, "")
	e.withRules(t, b, `event.data.type == "nothing"`, "")
	id := e.event(t, "stripe.invoice.paid")

	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventDelivered || takes.calls() != 1 || declines.calls() != 0 {
		t.Fatalf("event %s, calls %d/%d: want delivered, the declining consumer never called", ev.State, takes.calls(), declines.calls())
	}
	var filtered *intake.Delivery
	for i := range ds {
		if ds[i].ConsumerID == b.ID {
			filtered = &ds[i]
		}
	}
	if filtered == nil || filtered.Outcome != intake.DeliveryFiltered || filtered.StatusCode != 0 {
		t.Fatalf("deliveries %+v: want the declining consumer's record filtered", ds)
	}
}

// TestAFilterThatFailsOnTheEventCallsNoOneAndRecordsWhy: a filter that
// errors at run time (a field the event lacks) is no verdict to deliver
// on: the consumer is never called, its route is filtered, and its record
// names the filter's error; whether fanned out on a claim or with its
// settle.
func TestAFilterThatFailsOnTheEventCallsNoOneAndRecordsWhy(t *testing.T) {
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) {
			e := setup(t)
			rec, url := newRecorder(t, 200)
			c, _ := e.consumer(t, "billing", url, false, "stripe.*")
			e.withRules(t, c, `event.data.no_such_field == "x"`, "")
			e.planned = planned
			id := e.event(t, "stripe.invoice.paid")
			e.run(t)
			ev, ds := e.get(t, id)
			if rec.calls() != 0 || ev.State != intake.EventFiltered {
				t.Fatalf("event %s after %d calls: want filtered and no call", ev.State, rec.calls())
			}
			if len(ds) != 1 || ds[0].Outcome != intake.DeliveryFiltered || !strings.HasPrefix(ds[0].Error, "filter_error: ") ||
				!strings.Contains(ds[0].Error, "no_such_field") {
				t.Fatalf("deliveries %+v: want one filtered record naming the filter's error", ds)
			}
		})
	}
}

func TestAnEventEveryMatchingConsumerDeclinedEndsFilteredAndCanBeRerouted(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, _ := e.consumer(t, "billing", url, false, "stripe.*")
	e.withRules(t, c, `event.data.type == "nothing"`, "")
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventFiltered || rec.calls() != 0 {
		t.Fatalf("event %s after %d calls, want filtered", ev.State, rec.calls())
	}
	// Not unclaimed: a filtered event is by design.
	page, _ := e.store.ListEvents(context.Background(), intake.Scope{}, intake.EventFilter{State: intake.EventNoConsumer})
	if len(page.Items) != 0 {
		t.Fatal("a filtered event is listed as no_consumer")
	}
	// The operator widens the filter and re-routes: it is delivered.
	e.withRules(t, c, `event.type == "stripe.invoice.paid"`, "")
	if err := e.store.RerouteEvent(context.Background(), intake.Scope{}, id, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
		t.Fatalf("after the re-route: %s, %d calls", ev.State, rec.calls())
	}
}

func TestFiltersReadTheOriginalRequestsHeadersAndQueryWithoutItsCredentials(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, _ := e.consumer(t, "ci", url, false, "stripe.*")
	e.withRules(t, c, `headers["x-github-event"] == "push" && query["env"] == "prod" && !("authorization" in headers) && !("token" in query)`, "")
	e.header = http.Header{"X-Github-Event": {"push"}, "Authorization": {"Bearer sekrit"}}
	e.query = "env=prod&token=sekrit"
	taken := e.event(t, "stripe.invoice.paid")
	e.header = http.Header{"X-Github-Event": {"ping"}}
	declined := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if ev, _ := e.get(t, taken); ev.State != intake.EventDelivered {
		t.Fatalf("the push event is %s: the filter must see the headers and query, and no credential", ev.State)
	}
	if ev, _ := e.get(t, declined); ev.State != intake.EventFiltered || rec.calls() != 1 {
		t.Fatalf("the ping event is %s after %d calls, want filtered", ev.State, rec.calls())
	}
}

// TestTheDocumentedFilterExamplesChooseTheEventsTheySay runs each example
// of the README on an event it accepts and one it declines.
func TestTheDocumentedFilterExamplesChooseTheEventsTheySay(t *testing.T) {
	for _, c := range []struct {
		filter, typ, data     string
		header                http.Header
		declineData, declineT string
	}{
		{filter: `event.data.object.amount >= 100000`, typ: "stripe.charge.succeeded",
			data: `{"object":{"amount":250000}}`, declineData: `{"object":{"amount":99}}`},
		{filter: `headers["x-github-event"] == "push" && event.data.ref == "refs/heads/main"`, typ: "github.push",
			header: http.Header{"X-Github-Event": {"push"}}, data: `{"ref":"refs/heads/main"}`, declineData: `{"ref":"refs/heads/dev"}`},
		{filter: `event.type.startsWith("stripe.invoice.") && !event.replay`, typ: "stripe.invoice.paid",
			data: `{}`, declineT: "stripe.charge.succeeded"},
		{filter: `has(event.data.object.metadata.tenant)`, typ: "stripe.customer.created",
			data: `{"object":{"metadata":{"tenant":"t1"}}}`, declineData: `{"object":{"metadata":{}}}`},
	} {
		t.Run(c.filter, func(t *testing.T) {
			e := setup(t)
			rec, url := newRecorder(t, 200)
			cons, _ := e.consumer(t, "app", url, false, "*")
			e.withRules(t, cons, c.filter, "")
			e.header, e.data = c.header, c.data
			accepted := e.event(t, c.typ)
			declineType := c.typ
			if c.declineT != "" {
				declineType = c.declineT
			}
			if c.declineData != "" {
				e.data = c.declineData
			}
			declined := e.event(t, declineType)
			e.run(t)
			if ev, _ := e.get(t, accepted); ev.State != intake.EventDelivered {
				t.Errorf("the matching event is %s", ev.State)
			}
			if ev, _ := e.get(t, declined); ev.State != intake.EventFiltered {
				t.Errorf("the other event is %s, want filtered", ev.State)
			}
			if rec.calls() != 1 {
				t.Errorf("%d calls, want 1", rec.calls())
			}
		})
	}
}

func TestATransformReshapesTheBodyAndTheSignatureCoversWhatIsSent(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, secret := e.consumer(t, "chat", url, false, "stripe.*")
	e.withRules(t, c, "", `function transform(event, context) {
		return {body: {text: "paid: " + event.type, attempt: context.attempt}, headers: {"X-Kind": event.kind}};
	}`)
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
		t.Fatalf("%s, %d calls", ev.State, rec.calls())
	}
	req, body := rec.got[0], rec.bodies[0]
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || got["text"] != "paid: stripe.invoice.paid" || got["attempt"] != 1.0 {
		t.Fatalf("body %s: want the transform's", body)
	}
	if req.Header.Get("X-Kind") != "event" || req.Header.Get("webhook-id") != id {
		t.Fatalf("headers %v", req.Header)
	}
	want, _ := delivery.Sign(secret, id, mustAtoi(t, req.Header.Get("webhook-timestamp")), body)
	if req.Header.Get("webhook-signature") != want {
		t.Fatal("the signature does not cover the transformed body")
	}
}

func TestATransformReturningNullSkipsTheDeliveryAsFiltered(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, _ := e.consumer(t, "chat", url, false, "stripe.*")
	e.withRules(t, c, "", `function transform(event) { return null }`)
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventFiltered || rec.calls() != 0 || len(ds) != 1 || ds[0].Outcome != intake.DeliveryFiltered {
		t.Fatalf("%s, %d calls, %+v", ev.State, rec.calls(), ds)
	}
}

func TestAThrowingTransformIsAFailedAttemptAndFixingTheScriptHealsIt(t *testing.T) {
	e := setup(t)
	rec, url := newRecorder(t, 200)
	c, _ := e.consumer(t, "chat", url, false, "stripe.*")
	e.withRules(t, c, "", `function transform(event) { throw new Error("no template for " + event.type) }`)
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventRetrying || rec.calls() != 0 || len(ds) != 1 || ds[0].Outcome != intake.DeliveryRetry ||
		!strings.HasPrefix(ds[0].Error, "transform_error: ") || !strings.Contains(ds[0].Error, "no template for stripe.invoice.paid") {
		t.Fatalf("%s, %d calls, %+v: want a failed attempt recording transform_error", ev.State, rec.calls(), ds)
	}
	e.withRules(t, c, "", `function transform(event) { return {body: {ok: true}} }`)
	e.clock.Advance(10 * time.Second)
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
		t.Fatalf("after the fix: %s, %d calls", ev.State, rec.calls())
	}
}

// TestAHostileTransformCostsOnlyItsOwnConsumer: a transform that spins, one
// that allocates without end and one that returns 50 MB each fail their
// own delivery within their limits; the other consumer of the same event
// gets it on the same attempt, and the server carries on.
func TestAHostileTransformCostsOnlyItsOwnConsumer(t *testing.T) {
	for name, src := range map[string]string{
		"endless loop":   `function transform(e) { for (;;) {} }`,
		"memory bomb":    `function transform(e) { var a = []; for (;;) { a.push(new Array(100000).fill("x")) } }`,
		"50 MB output":   `function transform(e) { return {body: "x".repeat(50 * 1024 * 1024)} }`,
		"require":        `function transform(e) { return require("fs") }`,
		"fetch":          `function transform(e) { return fetch("http://169.254.169.254/") }`,
		"throws a value": `function transform(e) { throw 42 }`,
	} {
		t.Run(name, func(t *testing.T) {
			engine, err := rules.New(rules.Config{ScriptTimeout: 50 * time.Millisecond, ScriptMemory: 16 << 20}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer engine.Close()
			e := setup(t, func(c *router.Config) { c.Rules = engine })
			good, goodURL := newRecorder(t, 200)
			bad, badURL := newRecorder(t, 200)
			e.consumer(t, "good", goodURL, false, "stripe.*")
			c, _ := e.consumer(t, "hostile", badURL, false, "stripe.*")
			e.withRules(t, c, "", src)
			id := e.event(t, "stripe.invoice.paid")
			e.run(t)
			ev, ds := e.get(t, id)
			if good.calls() != 1 || bad.calls() != 0 || ev.State != intake.EventRetrying {
				t.Fatalf("calls good %d hostile %d, event %s", good.calls(), bad.calls(), ev.State)
			}
			for _, d := range ds {
				if d.ConsumerID == c.ID && (d.Outcome != intake.DeliveryRetry || !strings.HasPrefix(d.Error, "transform_error: ")) {
					t.Fatalf("hostile delivery %+v: want a failed attempt with transform_error", d)
				}
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// failingRequests is a store whose original requests cannot be read.
type failingRequests struct{ intake.EventQueue }

func (failingRequests) MessageRequests(context.Context, []string) (map[string]intake.OriginalRequest, error) {
	return nil, intake.Unavailable(context.DeadlineExceeded)
}

func TestAFilterWhoseRequestCannotBeReadLeavesTheEventToBeFannedOutAgain(t *testing.T) {
	e := setup(t)
	broken := router.New(router.Config{Store: failingRequests{e.store}, Sealer: e.sealer, Clock: e.clock,
		Backoff: intake.Backoff{Base: 10 * time.Second}, Lease: time.Minute, Rules: testkit.Rules(t)})
	rec, url := newRecorder(t, 200)
	c, _ := e.consumer(t, "ci", url, false, "stripe.*")
	e.withRules(t, c, `headers["x-github-event"] == "push"`, "")
	e.header = http.Header{"X-Github-Event": {"push"}}
	id := e.event(t, "stripe.invoice.paid")
	if _, err := broken.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev, ds := e.get(t, id)
	if ev.State != intake.EventPending || rec.calls() != 0 || len(ds) != 0 {
		t.Fatalf("%s, %d calls, %+v: a filter that could not be judged must neither decline nor call", ev.State, rec.calls(), ds)
	}
	// The event stays leased to the fan-out that gave up, then is taken
	// again and judged.
	if n := e.run(t); n != 0 {
		t.Fatalf("claimed %d while the lease held", n)
	}
	e.clock.Advance(time.Minute)
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
		t.Fatalf("after the lease: %s, %d calls", ev.State, rec.calls())
	}
}

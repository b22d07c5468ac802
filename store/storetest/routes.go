package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// The routes cases: an event fans out to one route per selected consumer,
// and each consumer's routes advance on their own, paced by its controls
// and its lane (DESIGN §9).

// backoff is the server's schedule in these cases: exact, no jitter.
var backoff = intake.Backoff{Base: time.Second, Max: time.Hour}

const routeLease = 24 * time.Hour

func (f fixture) consumer(t testing.TB, s intake.Store, name string, ctl intake.Controls) intake.Consumer {
	t.Helper()
	c := intake.Consumer{ID: intake.NewID(), OrgID: f.org.ID, Name: name, App: name, URL: "http://127.0.0.1:9/" + name,
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("sealed"), CreatedAt: t0, Controls: ctl}
	if err := s.CreateConsumer(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.Version = 1 // as every row starts
	return c
}

// eventAt commits one pending event that occurred at occurred.
func (f fixture) eventAt(t *testing.T, s intake.Store, occurred time.Time) intake.Event {
	t.Helper()
	m := f.ingest(t, s, fmt.Sprintf(`{"n":%q}`, intake.NewID()), t0)
	c := claimOne(t, s, t0)
	e := f.event(m, "evt_"+m.ID)
	e.OccurredAt = occurred
	st := processed(c, identity(m, "evt_"+m.ID), e)
	st.ProviderEventID = e.ProviderEventID
	if _, err := s.SettleMessage(context.Background(), t0, st); err != nil {
		t.Fatal(err)
	}
	return e
}

// to lists waiting routes to the consumers.
func to(consumers ...intake.Consumer) []intake.FanOutRoute {
	var out []intake.FanOutRoute
	for _, c := range consumers {
		out = append(out, intake.FanOutRoute{ConsumerID: c.ID})
	}
	return out
}

// filteredRoute is a route the consumer's filter declined, with its record.
func filteredRoute(e intake.Event, c intake.Consumer) intake.FanOutRoute {
	d := delivery(e, c.ID, 0, intake.DeliveryFiltered)
	d.StatusCode, d.Latency = 0, 0
	return intake.FanOutRoute{ConsumerID: c.ID, Filtered: true, Delivery: &d}
}

// fanOut claims the events due at now and fans out e with routes; the
// other events claimed are fanned out to no one.
func fanOut(t *testing.T, s intake.Store, e intake.Event, now time.Time, lease time.Duration, routes []intake.FanOutRoute) []intake.RouteClaim {
	t.Helper()
	var out []intake.RouteClaim
	found := false
	for _, c := range claimEvents(t, s, now) {
		if c.Event.ID != e.ID {
			t.Fatalf("claimed event %s, want only %s", c.Event.ID, e.ID)
		}
		found = true
		got, err := s.FanOut(context.Background(), now, intake.FanOut{EventID: e.ID, Attempt: c.Attempt, Routes: routes, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		out = got.Calls
	}
	if !found {
		t.Fatalf("event %s was not claimed at %v", e.ID, now)
	}
	return out
}

// routed commits n events, each fanned out at t0 to routes(e).
func (f fixture) routed(t *testing.T, s intake.Store, n int, routes func(intake.Event) []intake.FanOutRoute) []intake.Event {
	t.Helper()
	var out []intake.Event
	for range n {
		e := f.eventAt(t, s, t0)
		fanOut(t, s, e, t0, 0, routes(e))
		out = append(out, e)
	}
	return out
}

func claimRoutes(t *testing.T, s intake.Store, now time.Time, limit int) []intake.RouteClaim {
	t.Helper()
	c, err := s.ClaimRoutes(context.Background(), now, routeLease, intake.Calls(limit))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// result is a call's settlement: outcome handled, ignored or retry.
func result(c intake.RouteClaim, at time.Time, outcome string) intake.RouteSettlement {
	status, msg := 200, ""
	if outcome == intake.DeliveryRetry {
		status, msg = 503, "503 Service Unavailable"
	}
	d := intake.Delivery{ID: intake.NewID(), OrgID: c.Event.OrgID, EventID: c.Event.ID, ConsumerID: c.ConsumerID, Attempt: c.Attempt,
		Outcome: outcome, StatusCode: status, Latency: 5 * time.Millisecond, Error: msg, At: at}
	return intake.RouteSettlement{EventID: c.Event.ID, ConsumerID: c.ConsumerID, Attempt: c.Attempt, Probe: c.Probe, Delivery: &d, Called: true}
}

// settleRoute settles a call with outcome, returning the outcome the
// store recorded.
func settleRoute(t *testing.T, s intake.Store, now time.Time, c intake.RouteClaim, outcome string) (recorded string) {
	t.Helper()
	recorded, err := s.SettleRoute(context.Background(), now, result(c, now, outcome), backoff)
	if err != nil {
		t.Fatal(err)
	}
	return recorded
}

// settleRouteErr settles a call that is to be refused.
func settleRouteErr(ctx context.Context, s intake.Store, now time.Time, st intake.RouteSettlement) error {
	_, err := s.SettleRoute(ctx, now, st, backoff)
	return err
}

func eventState(t *testing.T, s intake.Store, id string) intake.EventState {
	t.Helper()
	e, err := s.Event(context.Background(), intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	return e.State
}

func health(t *testing.T, s intake.Store, c intake.Consumer, now time.Time) intake.ConsumerHealth {
	t.Helper()
	h, err := s.ConsumerHealth(context.Background(), intake.Scope{OrgID: c.OrgID}, c.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func auditActions(t *testing.T, s intake.Store, orgID string) map[string]int {
	t.Helper()
	page, err := s.ListAudit(context.Background(), intake.Scope{OrgID: orgID}, intake.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, a := range page.Items {
		out[a.Action]++
	}
	return out
}

// notices returns the unsent notices' topics when the store keeps
// notifications (nil when it does not).
func notices(t *testing.T, s intake.Store) map[string]int {
	t.Helper()
	n, ok := s.(intake.Notifications)
	if !ok {
		return nil
	}
	list, err := n.UnsentNotices(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, x := range list {
		out[x.Topic]++
	}
	return out
}

func wantNotice(t *testing.T, s intake.Store, topic string) {
	t.Helper()
	if got := notices(t, s); got != nil && got[topic] == 0 {
		t.Errorf("no %s notice: %v", topic, got)
	}
}

// byConsumer indexes claims by consumer id.
func byConsumer(cs []intake.RouteClaim) map[string]intake.RouteClaim {
	out := map[string]intake.RouteClaim{}
	for _, c := range cs {
		out[c.ConsumerID] = c
	}
	return out
}

// byEvent indexes claims by event id.
func byEvent(cs []intake.RouteClaim) map[string]intake.RouteClaim {
	out := map[string]intake.RouteClaim{}
	for _, c := range cs {
		out[c.Event.ID] = c
	}
	return out
}

// woken waits (briefly) for a wake-up on ch.
func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// testFanOutMovesTheEvent: no routes → no_consumer; every route filtered
// → filtered, with the filtered records; else the event stays pending and
// leaves the event queue for the route queue.
func testFanOutMovesTheEvent(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	a := f.consumer(t, s, "a", intake.Controls{})
	b := f.consumer(t, s, "b", intake.Controls{})

	none := f.eventAt(t, s, t0)
	fanOut(t, s, none, t0, 0, nil)
	if got := eventState(t, s, none.ID); got != intake.EventNoConsumer {
		t.Fatalf("fanned out to no one: %s, want no_consumer", got)
	}

	filtered := f.eventAt(t, s, t0)
	fanOut(t, s, filtered, t0, 0, []intake.FanOutRoute{filteredRoute(filtered, a), filteredRoute(filtered, b)})
	if got := eventState(t, s, filtered.ID); got != intake.EventFiltered {
		t.Fatalf("every route filtered: %s, want filtered", got)
	}
	if ds, _ := s.Deliveries(ctx, intake.Scope{}, filtered.ID); len(ds) != 2 || ds[0].Outcome != intake.DeliveryFiltered {
		t.Fatalf("filtered records = %+v", ds)
	}

	e := f.eventAt(t, s, t0)
	e.TraceParent = ""
	c := claimEvents(t, s, t0)
	if len(c) != 1 || c[0].Event.ID != e.ID || c[0].Attempt != 1 {
		t.Fatalf("event claims = %+v", c)
	}
	f1 := intake.FanOut{EventID: e.ID, Attempt: 1, Routes: []intake.FanOutRoute{filteredRoute(e, a), {ConsumerID: b.ID}}}
	stale := f1
	stale.Attempt = 2
	_, err := s.FanOut(ctx, t0, stale)
	wantCode(t, err, intake.ESTALE)
	if out, err := s.FanOut(ctx, t0, f1); err != nil || len(out.Calls) != 0 {
		t.Fatalf("fan-out without a lease = %+v %v", out, err)
	}
	_, err = s.FanOut(ctx, t0, f1)
	wantCode(t, err, intake.ESTALE) // fanned out already: not leased any more
	if got := eventState(t, s, e.ID); got != intake.EventPending {
		t.Fatalf("a waiting route leaves the event %s, want pending", got)
	}
	if again := claimEvents(t, s, t0.Add(time.Hour)); len(again) != 0 {
		t.Fatalf("a fanned out event was claimed again: %+v", again)
	}
	routes := claimRoutes(t, s, t0, 100)
	if len(routes) != 1 || routes[0].Event.ID != e.ID || routes[0].ConsumerID != b.ID || routes[0].Attempt != 1 || routes[0].Probe ||
		!routes[0].LeaseUntil.Equal(t0.Add(routeLease)) || string(routes[0].Event.Data) != string(e.Data) || routes[0].Event.OrgID != f.org.ID {
		t.Fatalf("route claims = %+v", routes)
	}
	if again := claimRoutes(t, s, t0, 100); len(again) != 0 {
		t.Fatalf("a leased route was claimed again: %+v", again)
	}
	settleRoute(t, s, t0, routes[0], intake.DeliveryHandled)
	if got := eventState(t, s, e.ID); got != intake.EventDelivered {
		t.Fatalf("one filtered, one handled: %s, want delivered", got)
	}
}

// testHandover: a fan-out leases, in its own commit, the routes of
// unpaced consumers whose breaker is closed; the others wait for a claim,
// and the routers are woken for them.
func testHandover(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	plain := f.consumer(t, s, "plain", intake.Controls{})
	fragile := f.consumer(t, s, "fragile", intake.Controls{BreakerFailures: 1})
	paused := f.consumer(t, s, "paused", intake.Controls{Paused: true})
	rated := f.consumer(t, s, "rated", intake.Controls{RatePerSec: 5})
	limited := f.consumer(t, s, "limited", intake.Controls{MaxInFlight: 3})
	ordered := f.consumer(t, s, "ordered", intake.Controls{Ordering: "subject"})

	first := f.eventAt(t, s, t0)
	got := byConsumer(fanOut(t, s, first, t0, time.Minute, to(plain, fragile)))
	if len(got) != 2 {
		t.Fatalf("handover = %+v, want plain and fragile", got)
	}
	for _, c := range got {
		if c.Event.ID != first.ID || c.Attempt != 1 || c.Probe || !c.LeaseUntil.Equal(t0.Add(time.Minute)) {
			t.Fatalf("handed over %+v", c)
		}
	}
	settleRoute(t, s, t0, got[plain.ID], intake.DeliveryHandled)
	settleRoute(t, s, t0, got[fragile.ID], intake.DeliveryRetry) // its breaker opens

	ch, stop := s.Listen(intake.TopicRoutes)
	defer stop()
	drain(ch)
	second := f.eventAt(t, s, t0)
	got = byConsumer(fanOut(t, s, second, t0, time.Minute, to(plain, fragile, paused, rated, limited, ordered)))
	if len(got) != 1 || got[plain.ID].Event.ID != second.ID {
		t.Fatalf("handover = %+v, want only the unpaced consumer with a closed breaker", got)
	}
	if !woken(ch) {
		t.Error("routes left waiting did not wake the routers")
	}
	claimed := byConsumer(claimRoutes(t, s, t0, 100))
	if len(claimed) != 3 || claimed[rated.ID].Event.ID != second.ID || claimed[limited.ID].Event.ID != second.ID ||
		claimed[ordered.ID].Event.ID != second.ID {
		t.Fatalf("claimed %+v, want the rated, limited and ordered consumers' routes", claimed)
	}
}

// testPause: a paused consumer's routes wait, spending nothing, until it is
// resumed.
func testPause(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "paused", intake.Controls{Paused: true})
	other := f.consumer(t, s, "other", intake.Controls{})
	f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(c) })
	f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(other) })
	if got := claimRoutes(t, s, t0.Add(time.Hour), 100); len(got) != 1 || got[0].ConsumerID != other.ID {
		t.Fatalf("claimed %+v, want only the other consumer's route", got)
	}
	if h := health(t, s, c, t0.Add(time.Hour)); h.State != intake.ConsumerPaused || h.Held != 2 || h.Due != 0 {
		t.Fatalf("paused health = %+v", h)
	}
	ch, stop := s.Listen(intake.TopicRoutes)
	defer stop()
	drain(ch)
	resumed := c
	resumed.Controls.Paused = false
	if err := s.UpdateConsumer(ctx, intake.Scope{}, resumed); err != nil {
		t.Fatal(err)
	}
	if !woken(ch) {
		t.Error("a resume did not wake the routers")
	}
	got := claimRoutes(t, s, t0.Add(time.Hour), 100)
	if len(got) != 2 || got[0].ConsumerID != c.ID || got[0].Attempt != 1 || got[1].Attempt != 1 {
		t.Fatalf("after the resume claimed %+v, want both routes at their first attempt", got)
	}
}

// testMaxInFlight: a consumer's calls in flight stay within its limit over
// every claim, until calls settle.
func testMaxInFlight(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "limited", intake.Controls{MaxInFlight: 2})
	f.routed(t, s, 5, func(intake.Event) []intake.FanOutRoute { return to(c) })
	first := claimRoutes(t, s, t0, 100)
	if len(first) != 2 {
		t.Fatalf("claimed %d, want 2", len(first))
	}
	if more := claimRoutes(t, s, t0.Add(time.Second), 100); len(more) != 0 {
		t.Fatalf("claimed %d more with 2 in flight", len(more))
	}
	if h := health(t, s, c, t0.Add(time.Second)); h.InFlight != 2 || h.Due != 3 || !h.OldestDueAt.Equal(t0) {
		t.Fatalf("health = %+v", h)
	}
	settleRoute(t, s, t0.Add(time.Second), first[0], intake.DeliveryHandled)
	if more := claimRoutes(t, s, t0.Add(time.Second), 100); len(more) != 1 {
		t.Fatalf("claimed %d after one settled, want 1", len(more))
	}
	if more := claimRoutes(t, s, t0.Add(time.Second), 1); len(more) != 0 {
		t.Fatalf("claimed %d more with 2 in flight", len(more))
	}
}

// testRate: a consumer's rate holds across claims: its burst (a second's
// worth), then rate per second.
func testRate(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "rated", intake.Controls{RatePerSec: 10})
	f.routed(t, s, 60, func(intake.Event) []intake.FanOutRoute { return to(c) })
	n := len(claimRoutes(t, s, t0, 100))
	if n != 10 {
		t.Fatalf("first claim took %d, want the burst of 10", n)
	}
	for at := 100 * time.Millisecond; at <= 3*time.Second; at += 100 * time.Millisecond {
		n += len(claimRoutes(t, s, t0.Add(at), 100))
	}
	if n < 39 || n > 41 {
		t.Fatalf("claimed %d over 3 s at 10/s, want 40±1 (the burst and 30)", n)
	}
}

// testOrdering: for one key, a consumer with ordering receives an event
// only once the earlier ones are done for it, even while an earlier one
// is waiting for its retry; other keys, and events without a key, go.
func testOrdering(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "ordered", intake.Controls{Ordering: "subject", Retry: intake.RetryPolicy{Attempts: 5}})
	keyed := func(key string) []intake.FanOutRoute { return []intake.FanOutRoute{{ConsumerID: c.ID, OrderKey: key}} }
	a1 := f.eventAt(t, s, t0)
	fanOut(t, s, a1, t0, time.Minute, keyed("a"))
	a2 := f.eventAt(t, s, t0.Add(time.Second))
	fanOut(t, s, a2, t0, time.Minute, keyed("a"))
	b1 := f.eventAt(t, s, t0.Add(2*time.Second))
	fanOut(t, s, b1, t0, time.Minute, keyed("b"))
	free := f.eventAt(t, s, t0.Add(3*time.Second))
	fanOut(t, s, free, t0, time.Minute, keyed(""))

	got := byEvent(claimRoutes(t, s, t0, 100))
	if len(got) != 3 || got[a1.ID].Attempt != 1 || got[b1.ID].Attempt != 1 || got[free.ID].Attempt != 1 {
		t.Fatalf("claimed %v, want a1, b1 and the unkeyed event", got)
	}
	if got[a1.ID].OrderKey != "a" || got[b1.ID].OrderKey != "b" || got[free.ID].OrderKey != "" {
		t.Fatalf("claimed keys %q %q %q, want each call to carry its route's key", got[a1.ID].OrderKey, got[b1.ID].OrderKey, got[free.ID].OrderKey)
	}
	settleRoute(t, s, t0, got[a1.ID], intake.DeliveryRetry) // a1 waits for its retry, 1 s on
	if more := claimRoutes(t, s, t0, 100); len(more) != 0 {
		t.Fatalf("claimed %+v while a1 waits for its retry", more)
	}
	retry := claimRoutes(t, s, t0.Add(time.Second), 100)
	if len(retry) != 1 || retry[0].Event.ID != a1.ID || retry[0].Attempt != 2 || retry[0].OrderKey != "a" {
		t.Fatalf("claimed %+v, want a1's retry", retry)
	}
	settleRoute(t, s, t0.Add(time.Second), retry[0], intake.DeliveryHandled)
	next := claimRoutes(t, s, t0.Add(time.Second), 100)
	if len(next) != 1 || next[0].Event.ID != a2.ID {
		t.Fatalf("claimed %+v, want a2 once a1 is handled", next)
	}
}

// testDisabledConsumerRoutesAreDropped: the routes of a consumer disabled
// or deleted after its fan-out are claimed, so the router drops them.
func testDisabledConsumerRoutesAreDropped(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	off := f.consumer(t, s, "off", intake.Controls{})
	gone := f.consumer(t, s, "gone", intake.Controls{})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(off, gone) })[0]
	disabled := off
	disabled.Enabled = false
	if err := s.UpdateConsumer(ctx, intake.Scope{}, disabled); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteConsumer, gone.ID, t0); err != nil {
		t.Fatal(err)
	}
	got := byConsumer(claimRoutes(t, s, t0, 100))
	if len(got) != 2 {
		t.Fatalf("claimed %+v, want both routes", got)
	}
	for _, c := range got {
		if _, err := s.SettleRoute(ctx, t0, intake.RouteSettlement{EventID: e.ID, ConsumerID: c.ConsumerID, Attempt: c.Attempt}, backoff); err != nil {
			t.Fatal(err)
		}
	}
	if st := eventState(t, s, e.ID); st != intake.EventNoConsumer {
		t.Fatalf("every route dropped: %s, want no_consumer", st)
	}
	if h := health(t, s, off, t0); h.State != intake.ConsumerDisabled || h.Held != 0 || h.Due != 0 || h.InFlight != 0 {
		t.Fatalf("disabled health = %+v", h)
	}
}

// testRetry: a failed call waits by the consumer's own base and spends
// the consumer's own attempts; the last one kills the route and the event.
func testRetry(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "own", intake.Controls{Retry: intake.RetryPolicy{Attempts: 3, Base: 10 * time.Second}})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })[0]
	now := t0
	for attempt, wait := range []time.Duration{10 * time.Second, 40 * time.Second} {
		got := claimRoutes(t, s, now, 100)
		if len(got) != 1 || got[0].Attempt != attempt+1 {
			t.Fatalf("claim at %v = %+v, want attempt %d", now, got, attempt+1)
		}
		if recorded := settleRoute(t, s, now, got[0], intake.DeliveryRetry); recorded != intake.DeliveryRetry {
			t.Fatalf("attempt %d recorded %q, want retry", attempt+1, recorded)
		}
		if st := eventState(t, s, e.ID); st != intake.EventRetrying {
			t.Fatalf("after a failed call the event is %s, want retrying", st)
		}
		if early := claimRoutes(t, s, now.Add(wait-time.Millisecond), 100); len(early) != 0 {
			t.Fatalf("claimed before its retry was due: %+v", early)
		}
		now = now.Add(wait)
	}
	got := claimRoutes(t, s, now, 100)
	if len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("last claim = %+v", got)
	}
	if recorded := settleRoute(t, s, now, got[0], intake.DeliveryRetry); recorded != intake.DeliveryDead {
		t.Fatalf("the call that spent the last attempt recorded %q, want dead", recorded)
	}
	ev, _ := s.Event(context.Background(), intake.Scope{}, e.ID)
	if ev.State != intake.EventDead || ev.Attempt != 3 {
		t.Fatalf("after the consumer's 3 attempts the event is %s at attempt %d, want dead at 3", ev.State, ev.Attempt)
	}
	wantNotice(t, s, intake.NoticeEventDead)
	if again := claimRoutes(t, s, now.Add(24*time.Hour), 100); len(again) != 0 {
		t.Fatalf("a dead route was claimed: %+v", again)
	}
	// The call that spent the last attempt is recorded dead, and counts as
	// failed in the consumer's health.
	ds, err := s.Deliveries(context.Background(), intake.Scope{OrgID: f.org.ID}, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, d := range ds {
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", d.Attempt, d.Outcome))
	}
	if fmt.Sprint(outcomes) != "[1:retry 2:retry 3:dead]" || ds[2].Error != "503 Service Unavailable" {
		t.Fatalf("deliveries %v (%+v), want the third dead with its error", outcomes, ds)
	}
	if h := health(t, s, c, now); h.Failed1h != 3 || h.Delivered1h != 0 || h.LastError != "503 Service Unavailable" {
		t.Fatalf("health %+v, want 3 failed calls", h)
	}
}

// testEventFollowsItsRoutes: one dead route makes the event dead once its
// routes are done; every route handled makes it delivered; a first failure
// that is also the last takes a pending event to dead.
func testEventFollowsItsRoutes(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	ok := f.consumer(t, s, "ok", intake.Controls{})
	once := f.consumer(t, s, "once", intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})

	mixed := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(ok, once) })[0]
	got := byConsumer(claimRoutes(t, s, t0, 100))
	settleRoute(t, s, t0, got[once.ID], intake.DeliveryRetry)
	if st := eventState(t, s, mixed.ID); st != intake.EventPending {
		t.Fatalf("one route dead, one waiting and never failed: %s, want pending", st)
	}
	settleRoute(t, s, t0, got[ok.ID], intake.DeliveryHandled)
	if st := eventState(t, s, mixed.ID); st != intake.EventDead {
		t.Fatalf("one handled, one dead: %s, want dead", st)
	}

	both := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(ok, once) })[0]
	got = byConsumer(claimRoutes(t, s, t0, 100))
	settleRoute(t, s, t0, got[ok.ID], intake.DeliveryHandled)
	if st := eventState(t, s, both.ID); st != intake.EventPending {
		t.Fatalf("one handled, one waiting: %s, want pending", st)
	}
	settleRoute(t, s, t0, got[once.ID], intake.DeliveryIgnored)
	if st := eventState(t, s, both.ID); st != intake.EventDelivered {
		t.Fatalf("both done: %s, want delivered", st)
	}

	single := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(once) })[0]
	got = byConsumer(claimRoutes(t, s, t0, 100))
	settleRoute(t, s, t0, got[once.ID], intake.DeliveryRetry)
	if st := eventState(t, s, single.ID); st != intake.EventDead {
		t.Fatalf("pending with one attempt, failed: %s, want dead", st)
	}
}

// testBreaker: consecutive failures trip a consumer's breaker; it then lets
// one probe through after 30 s, doubling the wait after each failed probe
// (which spends no attempt), and a success closes it.
func testBreaker(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "flaky", intake.Controls{Retry: intake.RetryPolicy{Attempts: 50}})
	events := f.routed(t, s, 12, func(intake.Event) []intake.FanOutRoute { return to(c) })
	first := claimRoutes(t, s, t0, 100)
	if len(first) != 12 {
		t.Fatalf("claimed %d, want 12", len(first))
	}
	for i, cl := range first[:10] {
		settleRoute(t, s, t0, cl, intake.DeliveryRetry)
		if a := auditActions(t, s, f.org.ID)[intake.LaneTripped]; (i < 9 && a != 0) || (i == 9 && a != 1) {
			t.Fatalf("after %d failures %d %s audits", i+1, a, intake.LaneTripped)
		}
	}
	wantNotice(t, s, intake.NoticeConsumerTripped)
	// Calls in flight when it tripped fail too: they spend no attempt.
	for _, cl := range first[10:] {
		settleRoute(t, s, t0, cl, intake.DeliveryRetry)
	}
	if h := health(t, s, c, t0); h.State != intake.ConsumerTripped || h.Failures != 12 || h.Held != 12 || h.Due != 0 {
		t.Fatalf("tripped health = %+v", h)
	}
	if got := claimRoutes(t, s, t0.Add(29*time.Second), 100); len(got) != 0 {
		t.Fatalf("claimed %d before the first probe", len(got))
	}
	// The calls the breaker holds are not work left waiting: the overview
	// names no due call until the probe is due, then the consumer.
	for _, at := range []time.Duration{29 * time.Second, 31 * time.Second} {
		o, err := s.Overview(context.Background(), intake.Scope{OrgID: f.org.ID},
			intake.OverviewQuery{Since: t0.Truncate(time.Hour), Hours: 1, Now: t0.Add(at)})
		if err != nil {
			t.Fatal(err)
		}
		if held := at < 30*time.Second; held != (o.OldestDueRouteConsumer == "") || (!held && o.OldestDueRouteConsumer != c.ID) {
			t.Fatalf("at +%s the overview's oldest due call is %q's (%v)", at, o.OldestDueRouteConsumer, o.OldestDueRoute)
		}
	}
	probe := claimRoutes(t, s, t0.Add(30*time.Second), 100)
	if len(probe) != 1 || !probe[0].Probe {
		t.Fatalf("claims at 30 s = %+v, want one probe", probe)
	}
	if more := claimRoutes(t, s, t0.Add(30*time.Second), 100); len(more) != 0 {
		t.Fatalf("claimed %d beside the probe", len(more))
	}
	probeAttempt := probe[0].Attempt
	settleRoute(t, s, t0.Add(30*time.Second), probe[0], intake.DeliveryRetry)
	if got := claimRoutes(t, s, t0.Add(89*time.Second), 100); len(got) != 0 {
		t.Fatalf("claimed %d before the second probe, 60 s after the first", len(got))
	}
	probe2 := claimRoutes(t, s, t0.Add(90*time.Second), 100)
	if len(probe2) != 1 || !probe2[0].Probe {
		t.Fatalf("claims at 90 s = %+v, want one probe", probe2)
	}
	settleRoute(t, s, t0.Add(90*time.Second), probe2[0], intake.DeliveryHandled)
	if a := auditActions(t, s, f.org.ID); a[intake.LaneRecovered] != 1 {
		t.Fatalf("audit after the probe succeeded = %v", a)
	}
	wantNotice(t, s, intake.NoticeConsumerRecovered)
	if h := health(t, s, c, t0.Add(90*time.Second)); h.State != intake.ConsumerEnabled || h.Failures != 0 || h.Due != 11 {
		t.Fatalf("recovered health = %+v", h)
	}
	rest := byEvent(claimRoutes(t, s, t0.Add(90*time.Second), 100))
	if len(rest) != 11 {
		t.Fatalf("claimed %d after recovery, want the other 11", len(rest))
	}
	// The first probe's route spent nothing on its failure; the ten calls
	// before the trip spent one attempt each but the tenth, which tripped it.
	for i, e := range events {
		cl, ok := rest[e.ID]
		if !ok {
			continue
		}
		want := 2
		if i >= 9 {
			want = 1
		}
		if cl.Event.ID == probe[0].Event.ID {
			want = probeAttempt
		}
		if cl.Attempt != want {
			t.Errorf("route of event %d claimed at attempt %d, want %d", i, cl.Attempt, want)
		}
	}
}

// testAutoDisable: a consumer that fails every call for its auto-disable
// period is disabled, audited and noticed.
func testAutoDisable(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "dying", intake.Controls{Retry: intake.RetryPolicy{Attempts: 50, Base: time.Hour}, BreakerFailures: 1000})
	f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })
	got := claimRoutes(t, s, t0, 100)
	settleRoute(t, s, t0, got[0], intake.DeliveryRetry)
	before := s.Changes().Version()
	later := t0.Add(72 * time.Hour)
	got = claimRoutes(t, s, later, 100)
	if len(got) != 1 {
		t.Fatalf("claimed %+v at 72 h", got)
	}
	settleRoute(t, s, later, got[0], intake.DeliveryRetry)
	if cur, _ := s.Consumer(context.Background(), intake.Scope{}, c.ID); cur.Enabled {
		t.Fatal("a consumer failing for 72 h is still enabled")
	}
	if a := auditActions(t, s, f.org.ID); a["consumer.disable"] != 1 {
		t.Fatalf("audit = %v, want one consumer.disable", a)
	}
	wantNotice(t, s, intake.NoticeConsumerDisabled)
	if s.Changes().Version() == before {
		t.Error("disabling a consumer did not move the change counter")
	}
}

// testGone: a consumer answering 410 Gone is disabled in the settle's
// transaction, audited in its org once, and its route dropped.
func testGone(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "old", intake.Controls{})
	events := f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(c) })
	before := s.Changes().Version()
	for _, cl := range claimRoutes(t, s, t0, 100) {
		r := result(cl, t0, intake.DeliveryRetry)
		r.Delivery.StatusCode, r.Gone = 410, true
		if _, err := s.SettleRoute(ctx, t0, r, backoff); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Consumer(ctx, intake.Scope{}, c.ID); got.Enabled {
		t.Fatal("a consumer that answered 410 is still enabled")
	}
	page, _ := s.ListAudit(ctx, intake.Scope{OrgID: f.org.ID}, intake.AuditFilter{})
	if len(page.Items) != 1 || page.Items[0].Action != "consumer.disable" || page.Items[0].OrgID != f.org.ID {
		t.Fatalf("audit = %+v, want one consumer.disable in the org", page.Items)
	}
	if s.Changes().Version() == before {
		t.Fatal("disabling a consumer did not announce the change")
	}
	for _, e := range events {
		if st := eventState(t, s, e.ID); st != intake.EventNoConsumer {
			t.Fatalf("its only route dropped: %s, want no_consumer", st)
		}
		if ds, _ := s.Deliveries(ctx, intake.Scope{}, e.ID); len(ds) != 1 || ds[0].StatusCode != 410 {
			t.Fatalf("deliveries = %+v", ds)
		}
	}
}

// testStaleRouteSettle: only the current call of a leased route settles,
// once.
func testStaleRouteSettle(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })[0]
	unleased := intake.RouteClaim{Event: e, ConsumerID: c.ID, Attempt: 1}
	wantCode(t, settleRouteErr(ctx, s, t0, result(unleased, t0, intake.DeliveryHandled)), intake.ESTALE)
	got := claimRoutes(t, s, t0, 100)
	wrong := got[0]
	wrong.Attempt = 2
	wantCode(t, settleRouteErr(ctx, s, t0, result(wrong, t0, intake.DeliveryHandled)), intake.ESTALE)
	settleRoute(t, s, t0, got[0], intake.DeliveryRetry)
	wantCode(t, settleRouteErr(ctx, s, t0, result(got[0], t0, intake.DeliveryHandled)), intake.ESTALE)
	if st := eventState(t, s, e.ID); st != intake.EventRetrying {
		t.Fatalf("event %s after a refused second settle, want retrying", st)
	}
	if ds, _ := s.Deliveries(ctx, intake.Scope{}, e.ID); len(ds) != 1 {
		t.Fatalf("%d deliveries, want the one of the first settle", len(ds))
	}
	_, err := s.FanOut(ctx, t0, intake.FanOut{EventID: intake.NewID(), Attempt: 1})
	if code := intake.ErrorCode(err); code != intake.ESTALE && code != intake.ENOTFOUND {
		t.Fatalf("fan-out of an unknown event: %v", err)
	}
}

// testRerouteKeepsHandledRoutes: a re-route deletes the routes that are
// not done well, so the next fan-out writes them afresh; the consumers
// that handled the event are done and keep their routes.
func testRerouteKeepsHandledRoutes(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	ok := f.consumer(t, s, "ok", intake.Controls{})
	once := f.consumer(t, s, "once", intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(ok, once) })[0]
	got := byConsumer(claimRoutes(t, s, t0, 100))
	settleRoute(t, s, t0, got[ok.ID], intake.DeliveryHandled)
	settleRoute(t, s, t0, got[once.ID], intake.DeliveryRetry)
	if st := eventState(t, s, e.ID); st != intake.EventDead {
		t.Fatalf("event %s, want dead", st)
	}
	later := t0.Add(time.Hour)
	if err := s.RerouteEvent(ctx, intake.Scope{}, e.ID, later); err != nil {
		t.Fatal(err)
	}
	if st := eventState(t, s, e.ID); st != intake.EventPending {
		t.Fatalf("re-routed event %s, want pending", st)
	}
	c := claimEvents(t, s, later)
	if len(c) != 1 || c[0].Event.ID != e.ID || !c[0].Done[ok.ID] || c[0].Done[once.ID] {
		t.Fatalf("claim after the re-route = %+v, want ok done and once not", c)
	}
	out, err := s.FanOut(ctx, later, intake.FanOut{EventID: e.ID, Attempt: c[0].Attempt, Routes: to(ok, once), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	claims := out.Calls
	if len(claims) != 1 || claims[0].ConsumerID != once.ID || claims[0].Attempt != 1 {
		t.Fatalf("re-route's fan-out handed over %+v, want once's fresh route", claims)
	}
	settleRoute(t, s, later, claims[0], intake.DeliveryHandled)
	if st := eventState(t, s, e.ID); st != intake.EventDelivered {
		t.Fatalf("event %s, want delivered", st)
	}
}

// testEventRoutes: an event's routes are read per consumer, with the
// attempts each spent and its last error, in one read for many events and
// only in the event's org; a re-route starts the dead route afresh.
func testEventRoutes(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	ok := f.consumer(t, s, "ok", intake.Controls{})
	once := f.consumer(t, s, "once", intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})
	events := f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(ok, once) })
	claims := claimRoutes(t, s, t0, 100)
	for _, c := range claims {
		outcome := intake.DeliveryHandled
		if c.Event.ID == events[0].ID && c.ConsumerID == once.ID {
			outcome = intake.DeliveryRetry
		}
		settleRoute(t, s, t0, c, outcome)
	}
	read := func(sc intake.Scope, ids ...string) string {
		t.Helper()
		rs, err := s.EventRoutes(ctx, sc, ids)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			who := map[string]string{ok.ID: "ok", once.ID: "once"}[r.ConsumerID]
			ev := map[string]string{events[0].ID: "e0", events[1].ID: "e1"}[r.EventID]
			out = append(out, fmt.Sprintf("%s %s %s %d %q", ev, who, r.State, r.Attempt, r.LastError))
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	want := `e0 ok handled 1 ""; e0 once dead 1 "503 Service Unavailable"; e1 ok handled 1 ""; e1 once handled 1 ""`
	if got := read(intake.Scope{OrgID: f.org.ID}, events[0].ID, events[1].ID); got != want {
		t.Fatalf("routes\n%s\nwant\n%s", got, want)
	}
	if got := read(intake.Scope{OrgID: other.org.ID}, events[0].ID, events[1].ID); got != "" {
		t.Fatalf("another org reads %s", got)
	}
	if got := read(intake.Scope{}); got != "" {
		t.Fatalf("no events read %s", got)
	}
	if err := s.RerouteEvent(ctx, intake.Scope{}, events[0].ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	fanOut(t, s, events[0], t0.Add(time.Minute), time.Minute, to(ok, once))
	if got := read(intake.Scope{}, events[0].ID); got != `e0 ok handled 1 ""; e0 once waiting 0 ""` {
		t.Fatalf("after a re-route: %s", got)
	}
}

// testControlsRoundTrip: a consumer's controls are kept and updated.
func testControlsRoundTrip(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	ctl := intake.Controls{Paused: true, RatePerSec: 2.5, MaxInFlight: 4, Ordering: "subject",
		Retry: intake.RetryPolicy{Attempts: 7, Base: 1500 * time.Millisecond}, BreakerFailures: 20, AutoDisableAfter: 48 * time.Hour}
	c := f.consumer(t, s, "c", ctl)
	if got, err := s.Consumer(ctx, intake.Scope{}, c.ID); err != nil || got.Controls != ctl {
		t.Fatalf("controls = %+v %v, want %+v", got.Controls, err, ctl)
	}
	c.Controls = intake.Controls{Ordering: `event.data.customer`, RatePerSec: 100}
	if err := s.UpdateConsumer(ctx, intake.Scope{OrgID: f.org.ID}, c); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListConsumers(ctx, intake.Scope{OrgID: f.org.ID})
	if err != nil || len(list) != 1 || list[0].Controls != c.Controls {
		t.Fatalf("listed %+v %v, want controls %+v", list, err, c.Controls)
	}
}

// testConsumerHealth: the figures of a consumer's health.
func testConsumerHealth(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{})
	other := newFixture(t, s, "other")
	if h := health(t, s, c, t0); h.State != intake.ConsumerEnabled || h.Delivered1h != 0 || h.InFlight != 0 || !h.LastDeliveryAt.IsZero() {
		t.Fatalf("fresh health = %+v", h)
	}
	_, err := s.ConsumerHealth(ctx, intake.Scope{OrgID: other.org.ID}, c.ID, t0)
	wantCode(t, err, intake.ENOTFOUND)

	events := f.routed(t, s, 6, func(intake.Event) []intake.FanOutRoute { return to(c) })
	claims := byEvent(claimRoutes(t, s, t0, 100))
	settle := func(i int, at time.Duration, outcome string, latency time.Duration) {
		t.Helper()
		r := result(claims[events[i].ID], t0.Add(at), outcome)
		r.Delivery.Latency = latency
		if _, err := s.SettleRoute(ctx, t0.Add(at), r, backoff); err != nil {
			t.Fatal(err)
		}
	}
	settle(0, time.Second, intake.DeliveryHandled, time.Second) // more than an hour before now: not counted
	settle(1, 3*time.Second, intake.DeliveryHandled, 30*time.Millisecond)
	settle(2, 4*time.Second, intake.DeliveryIgnored, 10*time.Millisecond)
	settle(3, 5*time.Second, intake.DeliveryHandled, 20*time.Millisecond)
	settle(4, 6*time.Second, intake.DeliveryRetry, 40*time.Millisecond) // due again 1 s on
	// events[5] stays in flight.
	late := f.eventAt(t, s, t0)
	fanOut(t, s, late, t0.Add(10*time.Second), 0, to(c))

	now := t0.Add(time.Hour + 2*time.Second)
	h := health(t, s, c, now)
	want := intake.ConsumerHealth{State: intake.ConsumerFailing, Delivered1h: 3, Failed1h: 1, P50: 20 * time.Millisecond, P99: 40 * time.Millisecond,
		LastStatus: 503, LastError: "503 Service Unavailable", LastDeliveryAt: t0.Add(6 * time.Second), InFlight: 1, Held: 0, Due: 2,
		OldestDueAt: t0.Add(7 * time.Second), NextAttemptAt: t0.Add(7 * time.Second), Failures: 1}
	if h != want {
		t.Fatalf("health = %+v\nwant     %+v", h, want)
	}
	paused := c
	paused.Controls.Paused = true
	if err := s.UpdateConsumer(ctx, intake.Scope{}, paused); err != nil {
		t.Fatal(err)
	}
	h = health(t, s, c, now)
	if h.State != intake.ConsumerPaused || h.Held != 2 || h.Due != 0 || !h.OldestDueAt.IsZero() || h.InFlight != 1 || !h.NextAttemptAt.IsZero() {
		t.Fatalf("paused health = %+v", h)
	}
}

// testHealthCountsRetriesAndFilterErrors: a failed call leaves the
// consumer failing with its route retrying and the time of the next
// attempt; a filter that failed on an event is counted, one that declined
// it is not; every consumer's state is listed in its org alone.
func testHealthCountsRetriesAndFilterErrors(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{Retry: intake.RetryPolicy{Attempts: 5}})
	idle := f.consumer(t, s, "idle", intake.Controls{})
	other := newFixture(t, s, "other")
	elsewhere := other.consumer(t, s, "elsewhere", intake.Controls{})

	events := f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(c) })
	broken := f.eventAt(t, s, t0)
	failed := filteredRoute(broken, c)
	failed.Delivery.Error = intake.FilterErrorPrefix + "no such key: customer"
	fanOut(t, s, broken, t0, 0, []intake.FanOutRoute{failed})
	declined := f.eventAt(t, s, t0)
	fanOut(t, s, declined, t0, 0, []intake.FanOutRoute{filteredRoute(declined, c)})

	claims := byEvent(claimRoutes(t, s, t0, 100))
	if len(claims) != 2 {
		t.Fatalf("claimed %d routes, want 2", len(claims))
	}
	settleRoute(t, s, t0.Add(time.Second), claims[events[0].ID], intake.DeliveryRetry) // due again 1 s on
	// events[1] stays in flight.

	h := health(t, s, c, t0.Add(1500*time.Millisecond))
	if h.State != intake.ConsumerFailing || h.Failures != 1 || h.InFlight != 1 || h.Due != 0 || h.Retrying != 1 ||
		!h.NextAttemptAt.Equal(t0.Add(2*time.Second)) || h.FilterErrors1h != 1 || h.Failed1h != 1 {
		t.Fatalf("health with a retry scheduled = %+v\nwant failing, 1 in flight, 0 due, 1 retrying at t0+2s, 1 filter error", h)
	}
	h = health(t, s, c, t0.Add(2*time.Second))
	if h.Due != 1 || h.Retrying != 0 || !h.OldestDueAt.Equal(t0.Add(2*time.Second)) || !h.NextAttemptAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("health once the retry is due = %+v", h)
	}
	if h := health(t, s, c, t0.Add(2*time.Hour)); h.FilterErrors1h != 0 {
		t.Fatalf("filter errors of more than an hour ago counted: %+v", h)
	}

	states, err := s.ConsumerStates(ctx, intake.Scope{OrgID: f.org.ID})
	if err != nil || len(states) != 2 || states[c.ID] != intake.ConsumerFailing || states[idle.ID] != intake.ConsumerEnabled {
		t.Fatalf("states = %v %v, want c failing and idle enabled, nothing of the other org", states, err)
	}
	if all, err := s.ConsumerStates(ctx, intake.Scope{}); err != nil || all[elsewhere.ID] != intake.ConsumerEnabled || len(all) != 3 {
		t.Fatalf("staff states = %v %v, want all three", all, err)
	}

	paused := c
	paused.Controls.Paused = true
	if err := s.UpdateConsumer(ctx, intake.Scope{}, paused); err != nil {
		t.Fatal(err)
	}
	h = health(t, s, c, t0.Add(1500*time.Millisecond))
	if h.State != intake.ConsumerPaused || h.Held != 1 || h.Retrying != 0 || !h.NextAttemptAt.IsZero() {
		t.Fatalf("paused health = %+v, want the retry held and no next attempt", h)
	}
	if states, _ := s.ConsumerStates(ctx, intake.Scope{OrgID: f.org.ID}); states[c.ID] != intake.ConsumerPaused {
		t.Fatalf("states = %v, want c paused", states)
	}
}

// testALapsedCallCountsAsFailed: a call whose lease ran out before it
// settled (its process stopped) is claimed again as the route's next
// attempt, and the lapsed call can no longer settle.
func testALapsedCallCountsAsFailed(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })[0]
	first := claimRoutes(t, s, t0, 100)
	if len(first) != 1 || first[0].Attempt != 1 {
		t.Fatalf("first claim = %+v, want attempt 1", first)
	}
	if again := claimRoutes(t, s, t0.Add(time.Second), 100); len(again) != 0 {
		t.Fatalf("a leased route was claimed again: %+v", again)
	}
	later := first[0].LeaseUntil.Add(time.Second)
	second := claimRoutes(t, s, later, 100)
	if len(second) != 1 || second[0].Event.ID != e.ID || second[0].Attempt != 2 {
		t.Fatalf("claim after the lease ran out = %+v, want the route as attempt 2", second)
	}
	wantCode(t, settleRouteErr(ctx, s, later, result(first[0], later, intake.DeliveryHandled)), intake.ESTALE)
	settleRoute(t, s, later, second[0], intake.DeliveryHandled)
	if st := eventState(t, s, e.ID); st != intake.EventDelivered {
		t.Fatalf("event %s, want delivered", st)
	}
}

// testReleasedRouteIsClaimedAgainAsTheSameAttempt: a call handed back is
// claimed again from the time given, before its lease would have run out,
// as the same attempt, however often it is handed back: a consumer
// allowed one attempt still gets its call. A release of another attempt,
// or of a call already settled, changes nothing.
func testReleasedRouteIsClaimedAgainAsTheSameAttempt(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })[0]
	now := t0
	var cl intake.RouteClaim
	for range 3 {
		got := claimRoutes(t, s, now, 100)
		if len(got) != 1 || got[0].Event.ID != e.ID || got[0].Attempt != 1 {
			t.Fatalf("claim at %s after releases = %+v, want the route as attempt 1", now.Sub(t0), got)
		}
		cl = got[0]
		wrong := cl.Attempt + 1
		if err := s.ReleaseRoute(ctx, now, e.ID, c.ID, wrong); err != nil {
			t.Fatal(err)
		}
		if again := claimRoutes(t, s, now.Add(time.Second), 100); len(again) != 0 {
			t.Fatalf("a release of attempt %d handed back the call of attempt %d: %+v", wrong, cl.Attempt, again)
		}
		if err := s.ReleaseRoute(ctx, now.Add(10*time.Second), e.ID, c.ID, cl.Attempt); err != nil {
			t.Fatal(err)
		}
		if early := claimRoutes(t, s, now.Add(9*time.Second), 100); len(early) != 0 {
			t.Fatalf("claimed before the release's time: %+v", early)
		}
		now = now.Add(10 * time.Second)
	}
	if ds, _ := s.Deliveries(ctx, intake.Scope{}, e.ID); len(ds) != 0 {
		t.Fatalf("released calls left records: %+v", ds)
	}
	cl = claimRoutes(t, s, now, 100)[0]
	settleRoute(t, s, now, cl, intake.DeliveryHandled)
	if err := s.ReleaseRoute(ctx, now, e.ID, c.ID, cl.Attempt); err != nil {
		t.Fatal(err)
	}
	if st := eventState(t, s, e.ID); st != intake.EventDelivered {
		t.Fatalf("event %s after a release of its settled call, want delivered", st)
	}
	if again := claimRoutes(t, s, now.Add(routeLease*2), 100); len(again) != 0 {
		t.Fatalf("a settled call was claimed again after a release: %+v", again)
	}
}

// testStatsFindTheOldestDueRoute: the stats' oldest due event counts the
// routes waiting for a call, unless their consumer is paused (held by
// choice, not stalled).
func testStatsFindTheOldestDueRoute(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{})
	f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })
	later := t0.Add(time.Minute)
	st, err := s.Stats(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	if !st.OldestDueEvent.Equal(t0) {
		t.Fatalf("oldest due event %v, want the route due at %v", st.OldestDueEvent, t0)
	}
	c.Controls.Paused = true
	if err := s.UpdateConsumer(ctx, intake.Scope{}, c); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Stats(ctx, later); err != nil || !st.OldestDueEvent.IsZero() {
		t.Fatalf("oldest due event %v (%v) with its consumer paused, want none", st.OldestDueEvent, err)
	}
}

// testOrderingWaitsForEarlierWebhooks: an ordered route waits while a
// webhook its connection received earlier is not yet fanned out (its message
// queued or being processed, or its event not yet fanned out), since that
// one may come first in its key; unordered consumers do not wait, nor does
// anyone for another connection's webhooks.
func testOrderingWaitsForEarlierWebhooks(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	ordered := f.consumer(t, s, "ordered", intake.Controls{Ordering: intake.OrderingSubject})
	plain := f.consumer(t, s, "plain", intake.Controls{})
	routes := []intake.FanOutRoute{{ConsumerID: ordered.ID, OrderKey: "k"}, {ConsumerID: plain.ID}}
	now := t0.Add(2 * time.Second)
	first := f.ingest(t, s, `{"n":1}`, t0)
	second := f.ingest(t, s, `{"n":2}`, t0.Add(time.Second))
	msgs := claimAll(t, s, now) // both being processed
	if len(msgs) != 2 {
		t.Fatalf("claimed %d messages, want 2", len(msgs))
	}
	// Another connection's webhook, received before both and still
	// queued, holds nothing of this one's back.
	newFixture(t, s, "other").ingest(t, s, `{"n":0}`, t0.Add(-time.Second))
	settle := func(m *intake.Message) intake.Event {
		t.Helper()
		for _, c := range msgs {
			if c.Message.ID == m.ID {
				e := f.event(m, "evt_"+m.ID)
				if _, err := s.SettleMessage(ctx, now, processed(c, identity(m, "evt_"+m.ID), e)); err != nil {
					t.Fatal(err)
				}
				return e
			}
		}
		t.Fatalf("message %s was not claimed", m.ID)
		return intake.Event{}
	}
	calls := func() map[string]string {
		t.Helper()
		got := map[string]string{}
		for _, c := range claimRoutes(t, s, now, 100) {
			got[c.ConsumerID] += c.Event.ID
		}
		return got
	}

	late := settle(second)
	fanOut(t, s, late, now, 0, routes)
	if got := calls(); got[ordered.ID] != "" || got[plain.ID] != late.ID {
		t.Fatalf("with an earlier webhook still being processed, calls = %v; want only the unordered consumer's", got)
	}
	early := settle(first)
	if got := calls(); got[ordered.ID] != "" {
		t.Fatalf("with an earlier event not yet fanned out, the ordered consumer got %s", got[ordered.ID])
	}
	fanOut(t, s, early, now, 0, routes)
	got, err := s.ClaimRoutes(ctx, now, routeLease, intake.Calls(100))
	if err != nil {
		t.Fatal(err)
	}
	var head intake.RouteClaim
	for _, c := range got {
		if c.ConsumerID == ordered.ID {
			if head.Event.ID != "" || c.Event.ID != early.ID {
				t.Fatalf("the ordered consumer got %s, want only the earlier webhook's event %s first", c.Event.ID, early.ID)
			}
			head = c
		}
	}
	if head.Event.ID == "" {
		t.Fatal("the ordered consumer got nothing once every earlier webhook was fanned out")
	}
	settleRoute(t, s, now, head, intake.DeliveryHandled)
	if got := calls(); got[ordered.ID] != late.ID {
		t.Fatalf("after the earlier event was handled, the ordered consumer got %q, want %s", got[ordered.ID], late.ID)
	}
}

// testSettleFanOut: a settle given an event's fan-out writes it with the
// event, as FanOut would: the routes written, the
// filtered ones recorded, the routes to consumers that nothing holds back
// leased to the caller (its calls returned), and the event left off the
// event queue in the state its routes give it. An event it is not given a
// fan-out for waits for a claim; an event that is not created (its
// provider event has its event already) gets no routes.
func testSettleFanOut(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	free := f.consumer(t, s, "free", intake.Controls{})
	paced := f.consumer(t, s, "paced", intake.Controls{RatePerSec: 10})
	picky := f.consumer(t, s, "picky", intake.Controls{})
	resting := f.consumer(t, s, "resting", intake.Controls{Paused: true})
	settle := func(providerEventID string, judge func(e intake.Event) (intake.FanOut, bool)) intake.Settled {
		t.Helper()
		m := f.ingest(t, s, `{"id":"`+providerEventID+`","n":"`+intake.NewID()+`"}`, t0)
		st := processed(claimOne(t, s, t0), nil, f.event(m, providerEventID))
		st.FanOuts = map[string]intake.FanOut{}
		for _, e := range st.Events {
			if fo, ok := judge(e); ok {
				st.FanOuts[e.ID] = fo
			}
		}
		out, err := s.SettleMessage(ctx, t0, st)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	calls := 0
	out := settle("evt_all", func(e intake.Event) (intake.FanOut, bool) {
		calls++
		held := delivery(e, resting.ID, 0, intake.DeliveryHeld)
		held.StatusCode, held.Latency, held.Error = 0, 0, "held: the consumer is paused"
		return intake.FanOut{Routes: []intake.FanOutRoute{{ConsumerID: free.ID}, {ConsumerID: paced.ID}, filteredRoute(e, picky),
			{ConsumerID: resting.ID, Delivery: &held}}, Lease: routeLease}, true
	})
	if calls != 1 || len(out.Events) != 1 {
		t.Fatalf("fan-out judged %d times; settled %+v", calls, out)
	}
	e := out.Events[0]
	if len(out.Calls) != 1 || out.Calls[0].ConsumerID != free.ID || out.Calls[0].Attempt != 1 || out.Calls[0].Event.ID != e.ID ||
		!out.Calls[0].LeaseUntil.Equal(t0.Add(routeLease)) {
		t.Fatalf("calls = %+v, want the unpaced consumer's first call leased", out.Calls)
	}
	if st := eventState(t, s, e.ID); st != intake.EventPending {
		t.Fatalf("the fanned-out event is %s, want pending on its routes", st)
	}
	if got := claimEvents(t, s, t0); len(got) != 0 {
		t.Fatalf("a claim took %d events fanned out with their settle", len(got))
	}
	ds, err := s.Deliveries(ctx, intake.Scope{}, e.ID)
	records := map[string]string{}
	for _, d := range ds {
		records[d.ConsumerID] += d.Outcome
	}
	if err != nil || len(ds) != 2 || records[picky.ID] != intake.DeliveryFiltered || records[resting.ID] != intake.DeliveryHeld {
		t.Fatalf("deliveries = %+v %v, want the filtered consumer's record and the paused one's held record", ds, err)
	}
	if h, err := s.ConsumerHealth(ctx, intake.Scope{}, resting.ID, t0); err != nil || h.Held != 1 || h.LastError != "" || !h.LastDeliveryAt.IsZero() {
		t.Fatalf("health of the paused consumer = %+v %v, want 1 held and no call (a held record is none)", h, err)
	}
	if got := claimRoutes(t, s, t0, 10); len(got) != 1 || got[0].ConsumerID != paced.ID {
		t.Fatalf("claimed routes = %+v, want the paced consumer's", got)
	}
	settleRoute(t, s, t0, out.Calls[0], intake.DeliveryHandled)

	if out := settle("evt_none", func(intake.Event) (intake.FanOut, bool) { return intake.FanOut{}, true }); eventState(t, s, out.Events[0].ID) != intake.EventNoConsumer {
		t.Fatalf("an event fanned out to no one is %s, want no_consumer", eventState(t, s, out.Events[0].ID))
	}
	out = settle("evt_filtered", func(e intake.Event) (intake.FanOut, bool) {
		return intake.FanOut{Routes: []intake.FanOutRoute{filteredRoute(e, picky)}}, true
	})
	if st := eventState(t, s, out.Events[0].ID); st != intake.EventFiltered || len(out.Calls) != 0 {
		t.Fatalf("an event every consumer filtered is %s with %d calls, want filtered and none", st, len(out.Calls))
	}
	out = settle("evt_later", func(intake.Event) (intake.FanOut, bool) { return intake.FanOut{}, false })
	if got := claimEvents(t, s, t0); len(got) != 1 || got[0].Event.ID != out.Events[0].ID {
		t.Fatalf("an event with no fan-out: claims = %+v, want it", got)
	}
	// evt_all again in another message (no identity judged): the event's
	// insert is skipped, so it gets no routes and no calls.
	out = settle("evt_all", func(e intake.Event) (intake.FanOut, bool) {
		return intake.FanOut{Routes: []intake.FanOutRoute{{ConsumerID: free.ID}}, Lease: routeLease}, true
	})
	if len(out.Events) != 0 || len(out.Calls) != 0 {
		t.Fatalf("a settle whose event existed = %+v, want nothing created", out)
	}
}

// testClaimShares: a route claim takes no more than the caller's shares
// allow, per consumer and per org, and leaves the lanes of consumers at
// their share as they were.
func testClaimShares(t *testing.T, s intake.Store) {
	a, b := newFixture(t, s, "acme"), newFixture(t, s, "beta")
	a1, a2 := a.consumer(t, s, "a1", intake.Controls{}), a.consumer(t, s, "a2", intake.Controls{})
	own := a.consumer(t, s, "own", intake.Controls{MaxInFlight: 5})
	b1 := b.consumer(t, s, "b1", intake.Controls{})
	a.routed(t, s, 6, func(intake.Event) []intake.FanOutRoute { return to(a1, a2, own) })
	b.routed(t, s, 6, func(intake.Event) []intake.FanOutRoute { return to(b1) })

	// b1 holds 2 calls here; with ConsumerShare 2 it takes none, and
	// a1 and a2 take 2 each, own its max_in_flight, within acme's share.
	shares := intake.CallShares{Total: 100, Slots: 30, Share: fair.ShareOf[int], ConsumerShare: 2,
		Org: map[string]int{b.org.ID: 2}, Consumer: map[string]int{b1.ID: 2}}
	got, err := s.ClaimRoutes(context.Background(), t0, routeLease, shares)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range got {
		n[c.ConsumerID]++
	}
	if n[b1.ID] != 0 || n[a1.ID] != 2 || n[a2.ID] != 2 || n[own.ID] != 5 {
		t.Fatalf("claimed b1 %d, a1 %d, a2 %d, own %d; want 0, 2, 2 and 5", n[b1.ID], n[a1.ID], n[a2.ID], n[own.ID])
	}

	// Each org's share of 10 slots while the other holds some is 4.
	shares = intake.CallShares{Total: 100, Slots: 10, Share: fair.ShareOf[int], Org: map[string]int{a.org.ID: 1, b.org.ID: 1}}
	got, err = s.ClaimRoutes(context.Background(), t0, routeLease, shares)
	if err != nil {
		t.Fatal(err)
	}
	byOrg := map[string]int{}
	for _, c := range got {
		byOrg[c.Event.OrgID]++
	}
	if byOrg[a.org.ID] != 3 || byOrg[b.org.ID] != 3 {
		t.Fatalf("claimed acme %d, beta %d; want 3 each: a share of 4 less the 1 each holds", byOrg[a.org.ID], byOrg[b.org.ID])
	}
}

// testUnleasedRoute: a fan-out's route marked unleased is written waiting
// for a claim, even to a consumer nothing paces, while the others are
// handed over.
func testUnleasedRoute(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	leased, held := f.consumer(t, s, "leased", intake.Controls{}), f.consumer(t, s, "held", intake.Controls{})
	e := f.eventAt(t, s, t0)
	routes := to(leased, held)
	routes[1].Unleased = true
	got := byConsumer(fanOut(t, s, e, t0, time.Minute, routes))
	if len(got) != 1 || got[leased.ID].Event.ID != e.ID {
		t.Fatalf("handed over %+v, want only the leased consumer's route", got)
	}
	claims := claimRoutes(t, s, t0, 10)
	if len(claims) != 1 || claims[0].ConsumerID != held.ID || claims[0].Event.ID != e.ID {
		t.Fatalf("claimed %+v, want the unleased route", claims)
	}
}

// testDeliveryAnswers: a delivery is read back with the consumer's answer
// as kept and the attempts in force when it was made; a later change of
// the consumer's retry rewrites none.
func testDeliveryAnswers(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "own", intake.Controls{Retry: intake.RetryPolicy{Attempts: 3}})
	e := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(c) })[0]
	boom := &intake.DeliveryResponse{Status: 500, Headers: map[string]string{"content-type": "application/json", "retry-after": "30"},
		Body: `{"error":"boom","quote":"\"\u0000\u2028é"}`, BodyEncoding: "text"}
	binary := &intake.DeliveryResponse{Status: 502, Body: "iVBORwAB/w==", BodyEncoding: "base64", BodyTruncated: true}
	now := t0
	for _, answer := range []*intake.DeliveryResponse{boom, binary} {
		got := claimRoutes(t, s, now, 100)
		if len(got) != 1 {
			t.Fatalf("claimed %+v at %v", got, now)
		}
		st := result(got[0], now, intake.DeliveryRetry)
		st.Delivery.Response = answer
		if _, err := s.SettleRoute(ctx, now, st, backoff); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	raised := c
	raised.Controls.Retry.Attempts = 6
	if err := s.UpdateConsumer(ctx, intake.Scope{}, raised); err != nil {
		t.Fatal(err)
	}
	got := claimRoutes(t, s, now, 100)
	if len(got) != 1 {
		t.Fatalf("claimed %+v", got)
	}
	settleRoute(t, s, now, got[0], intake.DeliveryHandled)
	ds, err := s.Deliveries(ctx, intake.Scope{OrgID: f.org.ID}, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("%d deliveries, want 3", len(ds))
	}
	for i, want := range []struct {
		max    int
		answer *intake.DeliveryResponse
	}{{3, boom}, {3, binary}, {6, nil}} {
		d := ds[i]
		if d.MaxAttempts != want.max || (d.Response == nil) != (want.answer == nil) ||
			d.Response != nil && fmt.Sprint(*d.Response) != fmt.Sprint(*want.answer) {
			t.Errorf("delivery %d: attempt %d of %d, answer %+v; want of %d, answer %+v", i+1, d.Attempt, d.MaxAttempts, d.Response, want.max, want.answer)
		}
	}
}

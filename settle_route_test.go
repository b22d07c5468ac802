package intake

import (
	"testing"
	"time"
)

func leasedRoute(event, consumer string, attempt int) Route {
	return Route{OrgID: org, EventID: event, ConsumerID: consumer, State: RouteWaiting, Attempt: attempt, NextAt: t0, LeaseUntil: t0.Add(time.Minute)}
}

func call(event, consumer string, attempt int, outcome string) TimedRouteSettlement {
	d := &Delivery{ID: NewID(), EventID: event, ConsumerID: consumer, Attempt: attempt, Outcome: outcome}
	if outcome == DeliveryRetry {
		d.Error = "status 500"
	}
	return TimedRouteSettlement{Now: t0, Backoff: DefaultBackoff, RouteSettlement: RouteSettlement{EventID: event, ConsumerID: consumer,
		Attempt: attempt, Called: true, Delivery: d}}
}

// oneRoute is a read of event e1 with one leased route to c1.
func oneRoute(c ConsumerLane, attempt int) RouteSettleRead {
	return RouteSettleRead{Events: map[string]EventState{"e1": EventPending},
		Routes:    map[RouteKey]Route{{"e1", "c1"}: leasedRoute("e1", "c1", attempt)},
		Counts:    map[string]RouteCounts{"e1": {Total: 1, Waiting: 1}},
		Consumers: map[string]ConsumerLane{"c1": c}}
}

func TestDecideRouteSettlements(t *testing.T) {
	enabled := ConsumerLane{Enabled: true, Lane: Lane{ConsumerID: "c1", OrgID: org}}
	cases := []struct {
		name  string
		read  RouteSettleRead
		batch []TimedRouteSettlement
		check func(t *testing.T, d RouteSettleDecision)
	}{{
		name:  "a handled call settles its route and delivers the event",
		read:  oneRoute(enabled, 0),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Errs[0] != nil || len(d.Routes) != 1 || d.Routes[0].State != RouteHandled || !d.Routes[0].LeaseUntil.IsZero() {
				t.Fatalf("errs %v routes %+v", d.Errs, d.Routes)
			}
			if len(d.Events) != 1 || d.Events[0].State != EventDelivered || len(d.Deliveries) != 1 || len(d.Lanes) != 0 {
				t.Fatalf("events %+v, %d deliveries, lanes %+v", d.Events, len(d.Deliveries), d.Lanes)
			}
		},
	}, {
		name:  "a failed call waits for its retry and the event retries",
		read:  oneRoute(enabled, 0),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			r := d.Routes[0]
			if r.State != RouteWaiting || r.Attempt != 1 || !r.NextAt.After(t0) || r.LastError != "status 500" {
				t.Fatalf("route %+v", r)
			}
			if d.Events[0].State != EventRetrying || len(d.Lanes) != 1 || d.Lanes[0].Failures != 1 {
				t.Fatalf("events %+v lanes %+v", d.Events, d.Lanes)
			}
		},
	}, {
		name:  "the last attempt's failure kills the route and the event, with a notice",
		read:  oneRoute(ConsumerLane{Enabled: true, Controls: Controls{Retry: RetryPolicy{Attempts: 3}}}, 2),
		batch: []TimedRouteSettlement{call("e1", "c1", 3, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if ns := otherNotices(d.Notices); d.Routes[0].State != RouteDead || d.Events[0].State != EventDead || len(ns) != 1 || ns[0].Topic != NoticeEventDead {
				t.Fatalf("route %+v events %+v notices %+v", d.Routes, d.Events, d.Notices)
			}
			if len(d.Deliveries) != 1 || d.Deliveries[0].Outcome != DeliveryDead || d.Deliveries[0].Error != "status 500" {
				t.Fatalf("deliveries %+v, want the last call's record dead with its error", d.Deliveries)
			}
			// A dead call is a failed call to the breaker.
			if len(d.Lanes) != 1 || d.Lanes[0].Failures != 1 || d.Lanes[0].FailingSince.IsZero() {
				t.Fatalf("lanes %+v, want one failure", d.Lanes)
			}
		},
	}, {
		name:  "a failed call before the consumer's last attempt is recorded retry",
		read:  oneRoute(ConsumerLane{Enabled: true, Controls: Controls{Retry: RetryPolicy{Attempts: 3}}}, 1),
		batch: []TimedRouteSettlement{call("e1", "c1", 2, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Routes[0].State != RouteWaiting || len(d.Deliveries) != 1 || d.Deliveries[0].Outcome != DeliveryRetry {
				t.Fatalf("routes %+v deliveries %+v", d.Routes, d.Deliveries)
			}
		},
	}, {
		name: "a failed probe spends no attempt: its record is retry, not dead",
		read: oneRoute(ConsumerLane{Enabled: true, Controls: Controls{Retry: RetryPolicy{Attempts: 3}}, Lane: Lane{Tripped: true}}, 2),
		batch: func() []TimedRouteSettlement {
			c := call("e1", "c1", 3, DeliveryRetry)
			c.Probe = true
			return []TimedRouteSettlement{c}
		}(),
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Routes[0].State != RouteWaiting || d.Routes[0].Attempt != 2 || d.Deliveries[0].Outcome != DeliveryRetry {
				t.Fatalf("routes %+v deliveries %+v", d.Routes, d.Deliveries)
			}
		},
	}, {
		name: "a call that is not leased is stale and writes nothing",
		read: func() RouteSettleRead {
			r := oneRoute(enabled, 0)
			rt := r.Routes[RouteKey{"e1", "c1"}]
			rt.LeaseUntil = time.Time{}
			r.Routes[RouteKey{"e1", "c1"}] = rt
			return r
		}(),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled)},
		check: func(t *testing.T, d RouteSettleDecision) {
			wantCode(t, d.Errs[0], ESTALE)
			if len(d.Routes)+len(d.Deliveries)+len(d.Events)+len(d.Lanes) != 0 {
				t.Fatalf("a stale call wrote %+v", d)
			}
		},
	}, {
		name: "a call on a route settled for good writes nothing: it moves no more",
		read: func() RouteSettleRead {
			r := oneRoute(enabled, 0)
			rt := r.Routes[RouteKey{"e1", "c1"}]
			rt.State = RouteHandled
			r.Routes[RouteKey{"e1", "c1"}] = rt
			r.Counts["e1"] = RouteCounts{Total: 1}
			return r
		}(),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Errs[0] == nil || len(d.Routes)+len(d.Deliveries)+len(d.Events)+len(d.Lanes) != 0 {
				t.Fatalf("a settled route's call: %v, wrote %+v", d.Errs[0], d)
			}
		},
	}, {
		name:  "a deleted consumer's route is dropped",
		read:  func() RouteSettleRead { r := oneRoute(enabled, 0); r.Consumers = nil; return r }(),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Routes[0].State != RouteDropped || d.Events[0].State != EventNoConsumer || len(d.Disables) != 0 {
				t.Fatalf("routes %+v events %+v", d.Routes, d.Events)
			}
		},
	}, {
		name: "410 Gone from two routes disables the consumer once",
		read: RouteSettleRead{Events: map[string]EventState{"e1": EventPending, "e2": EventPending},
			Routes: map[RouteKey]Route{{"e1", "c1"}: leasedRoute("e1", "c1", 0), {"e2", "c1"}: leasedRoute("e2", "c1", 0)},
			Counts: map[string]RouteCounts{"e1": {Total: 1, Waiting: 1}, "e2": {Total: 1, Waiting: 1}}, Consumers: map[string]ConsumerLane{"c1": enabled}},
		batch: func() []TimedRouteSettlement {
			a, b := call("e1", "c1", 1, DeliveryRetry), call("e2", "c1", 1, DeliveryRetry)
			a.Gone, b.Gone = true, true
			return []TimedRouteSettlement{a, b}
		}(),
		check: func(t *testing.T, d RouteSettleDecision) {
			if len(d.Disables) != 1 || d.Disables[0].TargetID != "c1" || d.Routes[0].State != RouteDropped || d.Routes[1].State != RouteDropped {
				t.Fatalf("disables %+v routes %+v", d.Disables, d.Routes)
			}
		},
	}, {
		name: "failures in one batch count together toward the breaker",
		read: func() RouteSettleRead {
			r := RouteSettleRead{Events: map[string]EventState{}, Routes: map[RouteKey]Route{}, Counts: map[string]RouteCounts{},
				Consumers: map[string]ConsumerLane{"c1": {Enabled: true, Controls: Controls{BreakerFailures: 3}, Lane: Lane{ConsumerID: "c1", Failures: 1}}}}
			for _, e := range []string{"e1", "e2"} {
				r.Events[e], r.Routes[RouteKey{e, "c1"}], r.Counts[e] = EventPending, leasedRoute(e, "c1", 0), RouteCounts{Total: 1, Waiting: 1}
			}
			return r
		}(),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryRetry), call("e2", "c1", 1, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if len(d.Lanes) != 1 || !d.Lanes[0].Tripped || d.Lanes[0].Failures != 3 {
				t.Fatalf("lanes %+v, want one, tripped at 3 failures", d.Lanes)
			}
			if len(d.Audit) != 1 || d.Audit[0].Action != LaneTripped || len(otherNotices(d.Notices)) != 1 {
				t.Fatalf("audit %+v notices %+v", d.Audit, d.Notices)
			}
			// The call that tripped it spent no attempt: it waits for the breaker.
			if d.Routes[1].Attempt != 0 || !d.Routes[1].NextAt.Equal(t0) {
				t.Fatalf("second route %+v", d.Routes[1])
			}
		},
	}, {
		name: "two routes of one event: the event moves once, when the second is done",
		read: RouteSettleRead{Events: map[string]EventState{"e1": EventPending},
			Routes: map[RouteKey]Route{{"e1", "c1"}: leasedRoute("e1", "c1", 0), {"e1", "c2"}: leasedRoute("e1", "c2", 0)},
			Counts: map[string]RouteCounts{"e1": {Total: 2, Waiting: 2}}, Consumers: map[string]ConsumerLane{"c1": enabled, "c2": enabled}},
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled), call("e1", "c2", 1, DeliveryIgnored)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if len(d.Events) != 1 || d.Events[0].State != EventDelivered || len(d.Routes) != 2 {
				t.Fatalf("events %+v routes %+v", d.Events, d.Routes)
			}
		},
	}, {
		name: "a delivery keeps the consumer's attempts in force when it settled, and its answer",
		read: oneRoute(ConsumerLane{Enabled: true, Controls: Controls{Retry: RetryPolicy{Attempts: 3}}}, 2),
		batch: func() []TimedRouteSettlement {
			c := call("e1", "c1", 3, DeliveryRetry)
			c.Delivery.Response = &DeliveryResponse{Status: 500, Body: `{"error":"boom"}`, BodyEncoding: "text"}
			return []TimedRouteSettlement{c}
		}(),
		check: func(t *testing.T, d RouteSettleDecision) {
			if len(d.Deliveries) != 1 || d.Deliveries[0].MaxAttempts != 3 || d.Deliveries[0].Attempt != 3 || d.Deliveries[0].Outcome != DeliveryDead {
				t.Fatalf("deliveries %+v, want attempt 3 of 3, dead", d.Deliveries)
			}
			if r := d.Deliveries[0].Response; r == nil || r.Body != `{"error":"boom"}` {
				t.Fatalf("response %+v, want the answer kept", r)
			}
		},
	}, {
		name:  "a consumer without its own retry: its deliveries count toward the default",
		read:  oneRoute(enabled, 0),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if d.Deliveries[0].MaxAttempts != DefaultMaxAttempts {
				t.Fatalf("max attempts %d, want %d", d.Deliveries[0].MaxAttempts, DefaultMaxAttempts)
			}
		},
	}, {
		name:  "a deleted consumer's delivery has no limit to keep",
		read:  func() RouteSettleRead { r := oneRoute(enabled, 0); r.Consumers = nil; return r }(),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled)},
		check: func(t *testing.T, d RouteSettleDecision) {
			if len(d.Deliveries) != 1 || d.Deliveries[0].MaxAttempts != 0 {
				t.Fatalf("deliveries %+v", d.Deliveries)
			}
		},
	}, {
		name:  "one call settled twice in a batch: the second is stale",
		read:  oneRoute(enabled, 0),
		batch: []TimedRouteSettlement{call("e1", "c1", 1, DeliveryRetry), call("e1", "c1", 1, DeliveryRetry)},
		check: func(t *testing.T, d RouteSettleDecision) {
			wantCode(t, d.Errs[1], ESTALE)
			if len(d.Deliveries) != 1 {
				t.Fatalf("%d deliveries, want 1", len(d.Deliveries))
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, DecideRouteSettlements(c.read, c.batch)) })
	}
}

func TestDecideFanOut(t *testing.T) {
	e := newEvent("e1", "")
	e.Attempt = 2
	read := FanOutRead{Event: e, Leased: true, Routed: map[string]bool{"done": true}, Counts: RouteCounts{Total: 1},
		Consumers: map[string]ConsumerLane{"c1": {Enabled: true}, "off": {}}}
	f := FanOut{EventID: "e1", Attempt: 2, Lease: time.Minute, Routes: []FanOutRoute{{ConsumerID: "done"}, {ConsumerID: "c1", OrderKey: "k"}, {ConsumerID: "off"}}}
	out, err := DecideFanOut(read, f, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Routes) != 2 || len(out.Calls) != 1 || out.Calls[0].ConsumerID != "c1" || out.Calls[0].OrderKey != "k" || !out.Wake || out.State != EventPending {
		t.Fatalf("fan-out %+v", out)
	}
	if _, err := DecideFanOut(read, FanOut{EventID: "e1", Attempt: 1}, t0); ErrorCode(err) != ESTALE {
		t.Fatalf("an old attempt's fan-out: %v, want ESTALE", err)
	}
	read.Leased = false
	if _, err := DecideFanOut(read, f, t0); ErrorCode(err) != ESTALE {
		t.Fatalf("an unleased event's fan-out: %v, want ESTALE", err)
	}
}

func TestRouteKeysOfListsEachRowOnce(t *testing.T) {
	k := RouteKeysOf([]TimedRouteSettlement{call("e1", "c1", 1, DeliveryHandled), call("e1", "c2", 1, DeliveryHandled),
		call("e1", "c1", 1, DeliveryHandled), call("e2", "c1", 1, DeliveryHandled)})
	if len(k.Events) != 2 || len(k.Consumers) != 2 || len(k.Routes) != 3 || k.Routes[1] != (RouteKey{"e1", "c2"}) {
		t.Fatalf("keys %+v", k)
	}
}

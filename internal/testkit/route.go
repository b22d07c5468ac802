package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Route moves an event as a router would and checks it ends in state to:
// the first time, a fan-out to the consumers of deliveries (to no one when
// there are none); then each delivery as the result of a call to its
// consumer. The deliveries get their ids, org, event and attempt; a failed
// call is due again a moment later.
func Route(t testing.TB, s intake.Store, now time.Time, eventID string, to intake.EventState, deliveries ...intake.Delivery) {
	t.Helper()
	ctx := context.Background()
	// The event queue hands out the longest-due event first: the caller
	// routes events in that order.
	claims, err := s.ClaimEvents(ctx, now, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Event.ID != eventID {
			t.Fatalf("claimed event %s, want %s", c.Event.ID, eventID)
		}
		f := intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt}
		seen := map[string]bool{}
		for _, d := range deliveries {
			if !seen[d.ConsumerID] && !c.Done[d.ConsumerID] {
				seen[d.ConsumerID] = true
				f.Routes = append(f.Routes, intake.FanOutRoute{ConsumerID: d.ConsumerID})
			}
		}
		if _, err := s.FanOut(ctx, now, f); err != nil {
			t.Fatal(err)
		}
	}
	if len(deliveries) > 0 {
		routes, err := s.ClaimRoutes(ctx, now, time.Minute, intake.Calls(1000))
		if err != nil {
			t.Fatal(err)
		}
		leased := map[string]intake.RouteClaim{}
		for _, r := range routes {
			if r.Event.ID == eventID {
				leased[r.ConsumerID] = r
			}
		}
		for _, d := range deliveries {
			r, ok := leased[d.ConsumerID]
			if !ok {
				t.Fatalf("event %s has no due route to consumer %s", eventID, d.ConsumerID)
			}
			d.ID, d.OrgID, d.EventID, d.Attempt = intake.NewID(), r.Event.OrgID, eventID, r.Attempt
			if d.At.IsZero() {
				d.At = now
			}
			st := intake.RouteSettlement{EventID: eventID, ConsumerID: d.ConsumerID, Attempt: r.Attempt, Delivery: &d, Called: true}
			if _, err := s.SettleRoute(ctx, now, st, intake.Backoff{Base: time.Nanosecond}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ev, err := s.Event(ctx, intake.Scope{}, eventID)
	if err != nil {
		t.Fatal(err)
	}
	if ev.State != to {
		t.Fatalf("routed event %s is %s, want %s", eventID, ev.State, to)
	}
}

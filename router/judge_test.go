package router_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/router"
)

// claimCounter counts what the router's claims return.
type claimCounter struct {
	intake.EventQueue
	events, routes atomic.Int64
}

func (c *claimCounter) ClaimEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]intake.EventClaim, error) {
	got, err := c.EventQueue.ClaimEvents(ctx, now, lease, limit)
	c.events.Add(int64(len(got)))
	return got, err
}

func (c *claimCounter) ClaimRoutes(ctx context.Context, now time.Time, lease time.Duration, shares intake.CallShares) ([]intake.RouteClaim, error) {
	got, err := c.EventQueue.ClaimRoutes(ctx, now, lease, shares)
	c.routes.Add(int64(len(got)))
	return got, err
}

// TestAPlannedSettleMakesItsFirstCallsWithNoClaim: an event fanned out in
// the settle that creates it, judged by the Judger before, reaches the
// consumer that nothing paces with no claim at all, its filters judged (the
// declining consumer recorded, never called); a paced consumer's route
// waits for the delivery stage's claim.
func TestAPlannedSettleMakesItsFirstCallsWithNoClaim(t *testing.T) {
	var counter *claimCounter
	e := setup(t, func(c *router.Config) {
		counter = &claimCounter{EventQueue: c.Store}
		c.Store = counter
	})
	free, freeURL := newRecorder(t, http.StatusOK)
	free.received = make(chan string, 1)
	paced, pacedURL := newRecorder(t, http.StatusOK)
	picky, pickyURL := newRecorder(t, http.StatusOK)
	e.consumer(t, "free", freeURL, false, "*")
	p, _ := e.consumer(t, "paced", pacedURL, false, "*")
	e.controls(t, p.ID, func(k *intake.Controls) { k.RatePerSec = 100 })
	f, _ := e.consumer(t, "picky", pickyURL, false, "*")
	e.withRules(t, f, `event.type == "nothing"`, "")

	e.planned = true
	id := e.event(t, "invoice.paid")
	e.r.Wait() // makes the calls the settle handed back
	<-free.received
	if n := counter.events.Load() + counter.routes.Load(); n != 0 {
		t.Fatalf("the first call needed %d claimed events or routes", n)
	}
	if ev, _ := e.get(t, id); ev.State != intake.EventPending || ev.Attempt != 1 {
		t.Fatalf("planned event = %s at attempt %d, want pending on its paced route at attempt 1", ev.State, ev.Attempt)
	}
	e.run(t)
	ev, ds := e.get(t, id)
	if ev.State != intake.EventDelivered || free.calls() != 1 || paced.calls() != 1 || picky.calls() != 0 {
		t.Fatalf("event %s; calls free %d, paced %d, picky %d; want delivered, 1, 1, 0", ev.State, free.calls(), paced.calls(), picky.calls())
	}
	if counter.events.Load() != 0 || counter.routes.Load() != 1 {
		t.Fatalf("claims took %d events and %d routes; want none and the paced one", counter.events.Load(), counter.routes.Load())
	}
	outcomes := map[string]string{}
	for _, d := range ds {
		outcomes[d.ConsumerID] = d.Outcome
	}
	if outcomes[f.ID] != intake.DeliveryFiltered {
		t.Fatalf("deliveries = %+v, want the picky consumer's filtered record", ds)
	}
}

// TestAPlanLeasesNoCallsWithoutFreeSlotsAndTheirRoutesAreClaimed: a
// judged fan-out leases a settle's calls only when the router has a free
// slot for each; otherwise the routes wait for the delivery stage's claim,
// and the slots it looked at stay free.
func TestAPlanLeasesNoCallsWithoutFreeSlotsAndTheirRoutesAreClaimed(t *testing.T) {
	e := setup(t, func(c *router.Config) { c.MaxEvents = 1 })
	a, aURL := newRecorder(t, http.StatusOK)
	b, bURL := newRecorder(t, http.StatusOK)
	e.consumer(t, "a", aURL, false, "*")
	e.consumer(t, "b", bURL, false, "*")
	e.planned = true
	id := e.event(t, "invoice.paid") // two calls, one slot: one leased at most
	e.r.Wait()
	if n := a.calls() + b.calls(); n > 1 {
		t.Fatalf("%d calls went out on one slot", n)
	}
	e.run(t)
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || a.calls() != 1 || b.calls() != 1 {
		t.Fatalf("after two claims: %s, calls %d and %d; want delivered, 1 and 1", ev.State, a.calls(), b.calls())
	}
}

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

// claimCounter counts the events ClaimEvents returns.
type claimCounter struct {
	intake.EventQueue
	claimed atomic.Int64
}

func (c *claimCounter) ClaimEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]intake.EventClaim, error) {
	got, err := c.EventQueue.ClaimEvents(ctx, now, lease, limit)
	c.claimed.Add(int64(len(got)))
	return got, err
}

// TestEventsHandedOverAreFannedOutAndDeliveredWithoutAClaim: events a
// settle hands over reach the running router at once (its poll is an hour
// away, and a claim could not take them under their lease), are fanned out
// at the attempt the settle leased and delivered, and no claim returns
// them.
func TestEventsHandedOverAreFannedOutAndDeliveredWithoutAClaim(t *testing.T) {
	var counter *claimCounter
	h := intake.NewEventHandoff(8, time.Minute)
	e := setup(t, func(c *router.Config) {
		counter = &claimCounter{EventQueue: c.Store}
		c.Store, c.Handoff, c.Poll = counter, h, time.Hour
	})
	e.handoff = h
	rec, url := newRecorder(t, http.StatusOK)
	rec.received = make(chan string, 8)
	e.consumer(t, "app", url, false, "*")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.r.Run(ctx); close(done) }()
	var ids []string
	for range 3 {
		ids = append(ids, e.event(t, "invoice.paid"))
		<-rec.received
	}
	cancel()
	<-done
	for _, id := range ids {
		ev, ds := e.get(t, id)
		if ev.State != intake.EventDelivered || ev.Attempt != 1 || len(ds) != 1 {
			t.Fatalf("event %s = %s at attempt %d with %d deliveries; want delivered at its handed-over attempt 1, once", id, ev.State, ev.Attempt, len(ds))
		}
	}
	if n := counter.claimed.Load(); n != 0 {
		t.Fatalf("claims returned %d events; every one was handed over", n)
	}
}

// TestEventsHandedOverButNotTakenAreFannedOutOnTheWayOut: a router that
// stops with handed-over events it has not taken fans them out without
// leasing their routes, so any router claims their calls at once rather
// than after the events' leases run out.
func TestEventsHandedOverButNotTakenAreFannedOutOnTheWayOut(t *testing.T) {
	h := intake.NewEventHandoff(8, time.Minute)
	e := setup(t, func(c *router.Config) { c.Handoff, c.Poll = h, time.Hour })
	rec, url := newRecorder(t, http.StatusOK)
	e.consumer(t, "app", url, false, "*")
	e.handoff = h
	ids := []string{e.event(t, "invoice.paid"), e.event(t, "invoice.paid")}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before it took them
	e.r.Run(ctx)
	if rec.calls() != 0 {
		t.Fatalf("a stopped router made %d calls", rec.calls())
	}
	claims, err := e.store.ClaimRoutes(context.Background(), e.clock.Now(), time.Minute, 10)
	if err != nil || len(claims) != len(ids) {
		t.Fatalf("claimable calls after the router stopped = %d %v, want %d", len(claims), err, len(ids))
	}
}

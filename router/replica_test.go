package router_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/router"
)

// replicaFunc is a replica whose Sync is a function.
type replicaFunc func(context.Context) error

func (f replicaFunc) Sync(ctx context.Context) error { return f(ctx) }

// With --replicate-sync no call goes out before the commits that made
// its event are in the replica; while the replica cannot be reached none
// goes out, and none spends an attempt: the call is made once it is back
// and the lease has run out.
func TestNoCallGoesOutBeforeTheReplicaHoldsItsEvent(t *testing.T) {
	var down error
	var e *env
	var id string
	var before []int // calls made when the replica was asked
	var held []int   // calls made when it held the commits so far
	var rec *recorder
	e = setup(t, func(c *router.Config) {
		c.Replica = replicaFunc(func(context.Context) error {
			before = append(before, rec.calls())
			if down == nil {
				held = append(held, rec.calls())
			}
			return down
		})
	})
	rec, url := newRecorder(t, 200)
	e.consumer(t, "billing", url, false, "*")

	down = errors.New("the replica cannot be reached")
	id = e.event(t, "stripe.invoice.paid")
	e.run(t)
	e.r.Wait()
	if rec.calls() != 0 || len(before) == 0 {
		t.Fatalf("replica unreachable: %d calls, the replica asked %d times; want none made, the replica asked", rec.calls(), len(before))
	}
	if ev, ds := e.get(t, id); ev.State == intake.EventDelivered || len(ds) != 0 {
		t.Fatalf("replica unreachable: event %s, deliveries %+v; want no delivery", ev.State, ds)
	}

	down = nil
	e.clock.Advance(time.Minute + time.Second) // the lease runs out
	e.run(t)
	e.r.Wait()
	ev, ds := e.get(t, id)
	if rec.calls() != 1 || ev.State != intake.EventDelivered || len(ds) != 1 || ds[0].Attempt != 1 {
		t.Fatalf("replica back: %d calls, event %s, deliveries %+v; want one call, attempt 1", rec.calls(), ev.State, ds)
	}
	if len(held) == 0 || held[0] != 0 {
		t.Errorf("the replica held the commits with %v calls made, want it to before the call", held)
	}
}

// A call its settle leased (handed over with the commit that made its
// event) is handed back when the replica cannot take that commit: not made,
// no attempt spent, and made at once when the replica is back, not after
// its lease runs out.
func TestACallTheReplicaCannotHoldIsHandedBack(t *testing.T) {
	var down error
	e := setup(t, func(c *router.Config) {
		c.Replica = replicaFunc(func(context.Context) error { return down })
	})
	e.planned = true
	rec, url := newRecorder(t, 200)
	e.consumer(t, "billing", url, false, "*")

	down = errors.New("the replica cannot be reached")
	id := e.event(t, "stripe.invoice.paid") // its call leased by the settle, handed over
	e.r.Wait()
	if rec.calls() != 0 {
		t.Fatalf("replica unreachable: %d calls, want none", rec.calls())
	}
	routes, err := e.store.EventRoutes(context.Background(), intake.Scope{}, []string{id})
	if err != nil || len(routes) != 1 || !routes[0].LeaseUntil.IsZero() || routes[0].Attempt != 0 {
		t.Fatalf("replica unreachable: routes %+v %v, want the call handed back unleased, no attempt spent", routes, err)
	}

	down = nil // back, at the same instant: no lease has run out
	e.run(t)
	e.r.Wait()
	ev, ds := e.get(t, id)
	if rec.calls() != 1 || ev.State != intake.EventDelivered || len(ds) != 1 || ds[0].Attempt != 1 {
		t.Fatalf("replica back: %d calls, event %s, deliveries %+v; want one call at once, attempt 1", rec.calls(), ev.State, ds)
	}
}

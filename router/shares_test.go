package router_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/router"
)

// hanging is a consumer that holds every call open until the test ends,
// counting the calls it holds.
type hanging struct {
	mu      sync.Mutex
	held    int
	peak    int
	entered chan struct{}
	URL     string
}

func newHanging(t *testing.T) *hanging {
	h := &hanging{entered: make(chan struct{}, 1000)}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.held++
		h.peak = max(h.peak, h.held)
		h.mu.Unlock()
		h.entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.held--
		h.mu.Unlock()
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	h.URL = srv.URL
	return h
}

func (h *hanging) holding() (now, peak int) { h.mu.Lock(); defer h.mu.Unlock(); return h.held, h.peak }

// otherOrg returns the env of a second org on the same store and router.
func (e *env) otherOrg(t *testing.T, name string) *env {
	t.Helper()
	ctx := context.Background()
	o := *e
	o.org = intake.Org{ID: intake.NewID(), Name: name, CreatedAt: e.clock.Now()}
	o.conn = intake.Connection{ID: intake.NewID(), OrgID: o.org.ID, Provider: "stripe", Name: "s", CreatedAt: e.clock.Now()}
	o.ep = intake.Endpoint{ID: intake.NewID(), OrgID: o.org.ID, ConnectionID: o.conn.ID, TokenHash: []byte(o.org.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	for _, err := range []error{e.store.CreateOrg(ctx, o.org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_" + name, Hash: []byte(o.org.ID)}),
		e.store.CreateConnection(ctx, o.conn), e.store.CreateEndpoint(ctx, o.ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &o
}

// TestAHangingConsumerWithABacklogHoldsOnlyItsOrgsShareOfTheCallSlots:
// org B's consumer never answers and has more events than the process has
// call slots; org A's events are still delivered while every call of B's
// is held open, fanned out in their settle and claimed alike, and B never
// holds more than its share.
func TestAHangingConsumerWithABacklogHoldsOnlyItsOrgsShareOfTheCallSlots(t *testing.T) {
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) {
			const slots = 8
			share := int(fair.Share(slots, 0)) // B alone holds calls: three quarters of them
			a := setup(t, func(c *router.Config) { c.MaxEvents, c.Poll = slots, 20*time.Millisecond })
			a.planned = planned
			b := a.otherOrg(t, "beta")
			runRouters(t, a.r) // first, so that it stops after the hanging calls are let go
			stuck := newHanging(t)
			b.consumer(t, "stuck", stuck.URL, false, "stripe.*")
			fast, fastURL := newRecorder(t, 200)
			fast.received = make(chan string, 10)
			a.consumer(t, "fast", fastURL, false, "stripe.*")

			for range 3 * slots {
				b.event(t, "stripe.invoice.paid")
			}
			for range share {
				testkit.Receive(t, "a call of B's hanging consumer", stuck.entered)
			}
			for i := range 3 {
				id := a.event(t, "stripe.invoice.paid")
				if got := testkit.Receive(t, "A's event at A's consumer", fast.received); got != id {
					t.Fatalf("A's event %d: got %s, want %s", i, got, id)
				}
			}
			now, peak := stuck.holding()
			if now < share {
				t.Fatalf("B's consumer holds %d calls; the test needs it to hold its whole share (%d) while A's go through", now, share)
			}
			if peak > share {
				t.Fatalf("B held %d of %d call slots at once, over its share of %d", peak, slots, share)
			}
		})
	}
}

// TestAHangingConsumerHoldsOnlyItsOwnShareWithinItsOrg: of one org's two
// consumers, the one that never answers holds at most the consumer share
// of the call slots, and the other's events go through meanwhile.
func TestAHangingConsumerHoldsOnlyItsOwnShareWithinItsOrg(t *testing.T) {
	const share = 2
	e := setup(t, func(c *router.Config) { c.MaxEvents, c.ConsumerShare, c.Poll = 16, share, 20*time.Millisecond })
	runRouters(t, e.r) // first, so that it stops after the hanging calls are let go
	stuck := newHanging(t)
	e.consumer(t, "stuck", stuck.URL, false, "stripe.*")
	fast, fastURL := newRecorder(t, 200)
	fast.received = make(chan string, 100)
	e.consumer(t, "fast", fastURL, false, "github.*")

	for range 10 {
		e.event(t, "stripe.invoice.paid")
	}
	for range share {
		testkit.Receive(t, "a call of the hanging consumer", stuck.entered)
	}
	for i := range 3 {
		id := e.event(t, "github.push")
		if got := testkit.Receive(t, "the other consumer's event", fast.received); got != id {
			t.Fatalf("event %d: got %s, want %s", i, got, id)
		}
	}
	if _, peak := stuck.holding(); peak > share {
		t.Fatalf("the hanging consumer held %d calls at once, over its share of %d", peak, share)
	}
}

package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/notify"
)

// within is how long a test waits for what should come at once: far less
// than the calls that hang, so a notifier that waits for them fails here.
const within = 10 * time.Second

// hanging is a receiver that accepts calls and never answers until the
// test ends. arrived gets each call's path; ended is closed when a caller
// gives up on a call.
type hanging struct {
	*httptest.Server
	arrived chan string
	ended   chan struct{}
}

func newHanging(t *testing.T) *hanging {
	h := &hanging{arrived: make(chan string, 16), ended: make(chan struct{})}
	release := make(chan struct{})
	var once sync.Once
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.arrived <- req.URL.Path
		select {
		case <-release:
		case <-req.Context().Done():
			once.Do(func() { close(h.ended) })
		}
	}))
	t.Cleanup(h.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handlers
	return h
}

// signalling is a receiver that answers 200 and reports each call on got.
func signalling(t *testing.T, got chan<- string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got <- req.URL.Path
	}))
	t.Cleanup(s.Close)
	return s
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("%s did not come within %v", what, within)
		panic("unreachable")
	}
}

func TestAHangingReceiverOfOneOrgDoesNotDelayAnotherOrgsNotification(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	b := e.newOrg("globex")
	hang := newHanging(t)
	gotA := make(chan string, 4)
	e.subscribe(b, hang.URL, "", intake.NoticeEventDead)
	e.subscribe(e.org, signalling(t, gotA).URL, "", intake.NoticeEventDead)
	// Calls may take a minute: B's outlasts the test unless the notifier
	// gives up on it, which the test sees on hang.ended.
	n := notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Interval: time.Millisecond,
		Sender: delivery.NewSender(delivery.Options{Timeout: time.Minute})})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-done })

	e.notice(b, intake.NoticeEventDead, "cons_b", "b's event is dead")
	go func() { done <- n.Run(ctx) }()
	waitFor(t, hang.arrived, "B's notification")

	e.notice(e.org, intake.NoticeEventDead, "cons_a", "a's event is dead")
	select {
	case <-gotA:
	case <-hang.ended:
		t.Fatal("A's notification waited for B's hanging call to end")
	case <-time.After(within):
		t.Fatalf("A's notification did not come within %v while B's call hung", within)
	}
	select {
	case <-hang.ended:
		t.Fatal("B's call ended before A's notification came")
	default:
	}
}

func TestOneOrgTakesAtMostItsShareOfTheCallsInFlight(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	b := e.newOrg("globex")
	hang := newHanging(t)
	gotA := make(chan string, 4)
	// B's URL and Slack webhook both hang; with one call per org, B holds
	// one of the two slots and A has the other.
	e.subscribe(b, hang.URL+"/url", hang.URL+"/slack", intake.NoticeEventDead)
	e.subscribe(e.org, signalling(t, gotA).URL, "", intake.NoticeEventDead)
	n := notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, MaxInFlight: 2, MaxInFlightPerOrg: 1,
		Sender: delivery.NewSender(delivery.Options{Timeout: time.Minute})})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); n.Wait() })

	e.notice(b, intake.NoticeEventDead, "cons_b", "b's event is dead")
	if err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, hang.arrived, "B's first call")
	e.notice(e.org, intake.NoticeEventDead, "cons_a", "a's event is dead")
	if err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, gotA, "A's notification")
	select {
	case path := <-hang.arrived:
		t.Fatalf("B has a second call in flight (%s): its share is one", path)
	default:
	}
}

func TestAnOrgsBacklogDoesNotStandInFrontOfAnotherOrgsNotification(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	b := e.newOrg("globex")
	calls := make(chan string, 16)
	gate := make(chan struct{})
	// B's receiver answers only when the test opens the gate, once per call.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls <- "b"
		<-gate
	}))
	t.Cleanup(slow.Close)
	e.subscribe(b, slow.URL, "", intake.NoticeEventDead)
	e.subscribe(e.org, signalling(t, calls).URL, "", intake.NoticeEventDead)
	n := notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, MaxInFlight: 1,
		Sender: delivery.NewSender(delivery.Options{Timeout: time.Minute})})
	t.Cleanup(n.Wait)
	t.Cleanup(func() { close(gate) })

	for _, s := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		e.notice(b, intake.NoticeEventDead, s, "b's event is dead")
	}
	if err := n.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, calls, "B's first call")
	e.notice(e.org, intake.NoticeEventDead, "cons_a", "a's event is dead")
	if err := n.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // B's first call ends; the slot is A's turn
	if got := waitFor(t, calls, "the call after B's first"); got != "/" {
		t.Fatalf("after B's first call came B's %q: A's notification waits behind B's backlog", got)
	}
}

// TestAnOrgBesideOthersTakesItsFairShareSoTheNextOrgFindsASlot: the
// per-org bound is also the org's fair share of the calls in flight
// beside the orgs holding some (internal/fair), so orgs whose receivers
// hang cannot fill every slot between them: C, arriving beside B, takes
// one call of its two, and A's notification finds the last slot.
func TestAnOrgBesideOthersTakesItsFairShareSoTheNextOrgFindsASlot(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	b, c := e.newOrg("globex"), e.newOrg("initech")
	hang := newHanging(t)
	gotA := make(chan string, 4)
	e.subscribe(b, hang.URL+"/b-url", hang.URL+"/b-slack", intake.NoticeEventDead)
	e.subscribe(c, hang.URL+"/c-url", hang.URL+"/c-slack", intake.NoticeEventDead)
	e.subscribe(e.org, signalling(t, gotA).URL, "", intake.NoticeEventDead)
	// Four slots, two calls an org: B alone may hold three (a quarter is
	// left for an org to come), so both its calls; C beside B one.
	n := notify.New(notify.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, MaxInFlight: 4, MaxInFlightPerOrg: 2,
		Sender: delivery.NewSender(delivery.Options{Timeout: time.Minute})})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); n.Wait() })
	poll := func() {
		t.Helper()
		if err := n.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}

	e.notice(b, intake.NoticeEventDead, "cons_b", "b's event is dead")
	poll()
	arrived := map[string]bool{}
	for range 2 {
		arrived[waitFor(t, hang.arrived, "B's calls")] = true
	}
	e.notice(c, intake.NoticeEventDead, "cons_c", "c's event is dead")
	poll()
	arrived[waitFor(t, hang.arrived, "C's first call")] = true
	if !arrived["/b-url"] || !arrived["/b-slack"] || arrived["/c-url"] == arrived["/c-slack"] {
		t.Fatalf("calls in flight %v: want both of B's and one of C's", arrived)
	}
	e.notice(e.org, intake.NoticeEventDead, "cons_a", "a's event is dead")
	poll()
	waitFor(t, gotA, "A's notification beside B's and C's hanging calls")
	select {
	case path := <-hang.arrived:
		t.Fatalf("C has a second call in flight (%s): its share beside B is one", path)
	default:
	}
}

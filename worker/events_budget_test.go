package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/worker"
)

// receiveFor stores a message to c's endpoint ep signed with the secret
// otherOrg gives its connection.
func (e *env) receiveFor(t *testing.T, c intake.Connection, ep intake.Endpoint, body string) *intake.Message {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: c.OrgID, ConnectionID: c.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Test-Secret": {"new-secret"}}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: e.clock.Now(), State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, w *worker.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestAnOrgPastItsEventsBudgetWaitsWhileAnotherOrgsMessagesFlowAndNothingIsLost:
// org B's messages make 10 events each against a budget of 10 a second
// with a burst of 10; its first two spend the burst and more, so its
// next two wait queued while org A's message, received after them, is
// processed at once. As the clock moves on, B's budget refills and its
// waiting messages are processed, one a second, every event made.
func TestAnOrgPastItsEventsBudgetWaitsWhileAnotherOrgsMessagesFlowAndNothingIsLost(t *testing.T) {
	e := setup(t)
	bConn, bEp := e.otherOrg(t)
	var b []string
	for i := range 4 {
		b = append(b, e.receiveFor(t, bConn, bEp, fmt.Sprintf(`{"id":"evt_b%d","type":"bulk","many":10}`, i)).ID)
	}
	m := metrics.New()
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 1, Metrics: m, Events: &fair.Rates{What: "events", Every: 10, Burst: 10}})
	runWorker(t, w)

	processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
	testkit.WaitFor(t, "B's first two messages processed", func() bool { return processed(b[0]) && processed(b[1]) })
	a := e.receive(t, "new-secret", `{"id":"evt_a","type":"paid"}`)
	testkit.WaitFor(t, "A's message processed while B is past its budget", func() bool { return processed(a) })
	for _, id := range b[2:] {
		if m := e.message(t, id); m.State != intake.MessageQueued || m.Attempt != 0 {
			t.Fatalf("B's message past its budget is %s at attempt %d; want it queued, untouched", m.State, m.Attempt)
		}
	}
	if n := testutil.ToFloat64(m.OrgEventsThrottled); n != 1 {
		t.Fatalf("intake_org_events_throttled_total = %v, want 1", n)
	}

	for i, id := range b[2:] {
		e.clock.Advance(time.Second)
		testkit.WaitFor(t, fmt.Sprintf("B's message %d processed once its budget refilled", i+3), func() bool { return processed(id) })
	}
	for _, id := range b {
		if n := len(e.message(t, id).EventIDs); n != 10 {
			t.Fatalf("message %s made %d events, want 10", id, n)
		}
	}
}

// TestAHandedOverMessageOfAnOrgPastItsEventsBudgetIsReleasedBeforeItsLeaseRunsOut:
// a message handed over while its org waits for its events budget is not
// started; past HandoffWait it is released (its attempt given back, its
// lease ended) for any process to claim once the org is within its budget
// again.
func TestAHandedOverMessageOfAnOrgPastItsEventsBudgetIsReleasedBeforeItsLeaseRunsOut(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 1, Handoff: h, HandoffWait: 2 * time.Second, Events: &fair.Rates{What: "events", Every: 1, Burst: 10}})
	runWorker(t, w)

	first := e.handOver(t, h, `{"id":"evt_1","type":"bulk","many":10}`, true)
	second := e.handOver(t, h, `{"id":"evt_2","type":"bulk","many":10}`, true)
	testkit.WaitFor(t, "the first two messages processed", func() bool {
		return e.message(t, first).State == intake.MessageProcessed && e.message(t, second).State == intake.MessageProcessed
	})
	held := e.handOver(t, h, `{"id":"evt_3","type":"bulk","many":10}`, true)
	e.clock.Advance(3 * time.Second) // past HandoffWait, and 7s short of the budget's refill
	testkit.WaitFor(t, "the held message released", func() bool { return e.message(t, held).Attempt == 0 })
	if m := e.message(t, held); m.LeaseUntil.After(e.clock.Now()) {
		t.Fatalf("the released message is still leased until %v", m.LeaseUntil)
	}
	e.clock.Advance(8 * time.Second)
	testkit.WaitFor(t, "the released message processed once the budget refilled", func() bool {
		return e.message(t, held).State == intake.MessageProcessed
	})
}

// TestAnOrgsMessagesRunOneAtATimeWhenTheirEventsWouldOvershootItsBudget:
// with room for eight at once, an org whose messages each make ten events
// against a budget of ten starts one, and once it has settled, one more
// (an org with none running may always start one); the others wait rather
// than all making their events at once and leaving the org eight times
// past its budget.
func TestAnOrgsMessagesRunOneAtATimeWhenTheirEventsWouldOvershootItsBudget(t *testing.T) {
	e := setup(t)
	bConn, bEp := e.otherOrg(t)
	var b []string
	for i := range 8 {
		b = append(b, e.receiveFor(t, bConn, bEp, fmt.Sprintf(`{"id":"evt_b%d","type":"bulk","many":10}`, i)).ID)
	}
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 8, Events: &fair.Rates{What: "events", Every: 10, Burst: 10}})
	runWorker(t, w)

	processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
	testkit.WaitFor(t, "B's first two messages processed", func() bool {
		n := 0
		for _, id := range b {
			if processed(id) {
				n++
			}
		}
		return n >= 2
	})
	a := e.receive(t, "new-secret", `{"id":"evt_a","type":"paid"}`)
	testkit.WaitFor(t, "A's message processed", func() bool { return processed(a) })
	n := 0
	for _, id := range b {
		if processed(id) {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d of B's messages made their events with the clock standing still, want 2 (the budget's, and one past it)", n)
	}
}

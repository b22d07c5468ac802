package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/router"
	"github.com/intakehq/intake/worker"
)

// TestTheSettleFansItsEventsOutAndTheRouterMakesTheFirstCall: with the
// Judger it shares with the local router judging its fan-outs, the
// worker's settle writes the events fanned out, and the router makes the
// call the settle handed over, with no event claimed by any router.
func TestTheSettleFansItsEventsOutAndTheRouterMakesTheFirstCall(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		got <- r.Header.Get("webhook-id")
	}))
	t.Cleanup(srv.Close)
	c := intake.Consumer{ID: intake.NewID(), OrgID: e.ep.OrgID, Name: "app", App: "app", URL: srv.URL, EventTypes: []string{"*"},
		Enabled: true, CreatedAt: e.clock.Now()}
	c.SealedSecret = e.sealer.Seal([]byte(delivery.NewSecret()), []byte(c.ID))
	if err := e.store.CreateConsumer(ctx, c); err != nil {
		t.Fatal(err)
	}
	calls := handoff.NewCalls()
	judger := fanout.New(fanout.Config{Store: e.store, Clock: e.clock})
	rt := router.New(router.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, FanOut: judger, Calls: calls,
		Sender: delivery.NewSender(delivery.Options{Timeout: 5 * time.Second, Policy: delivery.DefaultPolicy()})})
	e.w = worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, FanOut: judger, Calls: calls})

	id := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid"}`)
	e.run(t)
	select {
	case <-calls.Ready():
	default:
		t.Fatal("the settle handed nothing back to the router")
	}
	rt.Wait() // makes the calls handed back
	m := e.message(t, id)
	if m.State != intake.MessageProcessed || len(m.EventIDs) != 1 {
		t.Fatalf("message = %+v, want processed into one event", m)
	}
	if webhookID := <-got; webhookID != m.EventIDs[0] {
		t.Fatalf("the consumer got %q, want event %s", webhookID, m.EventIDs[0])
	}
	if claims, err := e.store.ClaimEvents(ctx, e.clock.Now(), time.Minute, 10); err != nil || len(claims) != 0 {
		t.Fatalf("the event is still on the event queue for a claim: %d %v", len(claims), err)
	}
	if _, err := rt.RunOnce(ctx); err != nil { // waits for the call's settle
		t.Fatal(err)
	}
	if ev, err := e.store.Event(ctx, intake.Scope{}, m.EventIDs[0]); err != nil || ev.State != intake.EventDelivered {
		t.Fatalf("event = %+v %v, want delivered", ev, err)
	}
}

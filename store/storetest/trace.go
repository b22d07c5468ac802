package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testTraceParent: a message keeps the traceparent it was ingested with
// until a worker claims it, in a batch with an untraced neighbour, and an
// event keeps the one it was settled with until the router claims it; the
// worker and the router, maybe in other processes, continue those traces.
func testTraceParent(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	const msgTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const evtTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
	traced := f.message(`{"id":"evt_1"}`, t0)
	traced.TraceParent = msgTrace
	untraced := f.message(`{"id":"evt_2"}`, t0.Add(time.Millisecond))
	for _, m := range []*intake.Message{traced, untraced} {
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	claims := claimAll(t, s, t0.Add(time.Second))
	got := map[string]string{}
	for _, c := range claims {
		got[c.Message.ID] = c.Message.TraceParent
	}
	if len(claims) != 2 || got[traced.ID] != msgTrace || got[untraced.ID] != "" {
		t.Fatalf("claimed traceparents %v, want %s on %s and none on %s", got, msgTrace, traced.ID, untraced.ID)
	}
	var c intake.Claim
	for _, cl := range claims {
		if cl.Message.ID == traced.ID {
			c = cl
		}
	}
	e := f.event(traced, "evt_1")
	e.TraceParent = evtTrace
	if _, err := s.SettleMessage(ctx, t0.Add(time.Second), processed(c, identity(traced, "evt_1"), e)); err != nil {
		t.Fatal(err)
	}
	ecs, err := s.ClaimEvents(ctx, t0.Add(2*time.Second), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ecs) != 1 || ecs[0].Event.ID != e.ID || ecs[0].Event.TraceParent != evtTrace {
		t.Fatalf("claimed events %+v, want %s with traceparent %s", ecs, e.ID, evtTrace)
	}
}

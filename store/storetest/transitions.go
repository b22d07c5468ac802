package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testForbiddenTransitions drives a store into every state and asks it for
// the moves the design forbids (processed → processing, dead → processed,
// delivered → retrying, a re-route of live work, …): each is refused and
// leaves the row as it was. The root package tests the table; this proves
// each store's writes go through it.
func testForbiddenTransitions(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	later := t0.Add(24 * time.Hour)

	// A settled message takes no further settlement, release or claim.
	for _, final := range []intake.Settlement{
		{To: intake.MessageProcessed, Outcome: intake.OutcomeNoEvents},
		{To: intake.MessageIgnored, Outcome: intake.OutcomeSignature},
		{To: intake.MessageDead, ErrorCode: intake.ErrCodePermanent},
	} {
		m := f.ingest(t, s, fmt.Sprintf(`{"n":%q}`, intake.NewID()), t0)
		c := claimOne(t, s, t0)
		final.MessageID, final.Attempt = m.ID, c.Attempt
		if _, err := s.SettleMessage(ctx, t0, final); err != nil {
			t.Fatal(err)
		}
		for _, to := range append(intake.MessageStates, "bogus") {
			if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: to,
				Outcome: intake.OutcomeNoEvents}); err == nil {
				t.Errorf("%s message settled again as %s", final.To, to)
			}
		}
		s.ReleaseMessage(ctx, t0, 0, m.ID, c.Attempt) // whatever it answers, the message stays settled
		if again := claimAll(t, s, later); len(again) != 0 {
			t.Errorf("%s message claimed again: %+v", final.To, again)
		}
		if got, _ := s.Message(ctx, intake.Scope{}, m.ID); got.State != final.To || got.Attempt != c.Attempt {
			t.Errorf("%s message is now %s attempt %d", final.To, got.State, got.Attempt)
		}
	}

	// A failed message waits: its settled attempt cannot settle again, and
	// only a claim, once due, takes it back to processing.
	m := f.ingest(t, s, `{"n":"failed"}`, t0)
	c := claimOne(t, s, t0)
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: intake.MessageFailed,
		ErrorCode: intake.ErrCodeTransient, NextAttemptAt: t0.Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: c.Attempt, To: intake.MessageProcessed,
		Outcome: intake.OutcomeNoEvents}); err == nil {
		t.Error("failed message settled processed without a new attempt")
	}
	if got, _ := s.Message(ctx, intake.Scope{}, m.ID); got.State != intake.MessageFailed {
		t.Errorf("failed message is now %s", got.State)
	}
	if next := claimOne(t, s, t0.Add(10*time.Second)); next.Message.ID != m.ID || next.Attempt != 2 {
		t.Fatalf("failed message's next claim = %+v", next)
	}
	if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: 2, To: intake.MessageDead,
		ErrorCode: intake.ErrCodePermanent}); err != nil {
		t.Fatal(err)
	}

	eventIs := func(e intake.Event, want intake.EventState, what string) {
		t.Helper()
		if got, _ := s.Event(ctx, intake.Scope{}, e.ID); got.State != want {
			t.Errorf("%s: event is %s, want %s", what, got.State, want)
		}
	}
	rerouteRefused := func(e intake.Event, from intake.EventState) {
		t.Helper()
		wantCode(t, s.RerouteEvent(ctx, intake.Scope{}, e.ID, t0), intake.ECONFLICT)
		eventIs(e, from, "after a refused re-route")
	}
	notClaimed := func(e intake.Event, what string) {
		t.Helper()
		for _, again := range claimEvents(t, s, later) {
			if again.Event.ID == e.ID {
				t.Errorf("%s event claimed: %+v", what, again)
			}
		}
	}
	// An event moves by its routes only.
	cons := f.consumer(t, s, "c", intake.Controls{Retry: intake.RetryPolicy{Attempts: 3}})
	once := f.consumer(t, s, "once", intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})

	// pending → retrying → delivered, refusing every other move on the way.
	e := f.pendingEvent(t, s)
	rerouteRefused(e, intake.EventPending)
	fanOut(t, s, e, t0, 0, to(cons))
	first := claimRoutes(t, s, t0, 100)
	settleRoute(t, s, t0, first[0], intake.DeliveryRetry)
	eventIs(e, intake.EventRetrying, "after a failed call")
	rerouteRefused(e, intake.EventRetrying)
	second := claimRoutes(t, s, t0.Add(time.Second), 100)
	settleRoute(t, s, t0.Add(time.Second), second[0], intake.DeliveryHandled)
	eventIs(e, intake.EventDelivered, "after the retry was handled")
	for _, outcome := range []string{intake.DeliveryRetry, intake.DeliveryHandled} {
		if _, err := s.SettleRoute(ctx, t0, result(second[0], t0, outcome), backoff); err == nil {
			t.Errorf("a delivered event's call settled again as %s", outcome)
		}
	}
	eventIs(e, intake.EventDelivered, "after refused settles")
	rerouteRefused(e, intake.EventDelivered)
	notClaimed(e, "delivered")

	// dead, no_consumer and filtered go back to pending only by a re-route.
	for _, final := range []intake.EventState{intake.EventDead, intake.EventNoConsumer, intake.EventFiltered} {
		e := f.pendingEvent(t, s)
		var fo intake.FanOut
		for _, c := range claimEvents(t, s, t0) {
			if c.Event.ID == e.ID {
				fo = intake.FanOut{EventID: e.ID, Attempt: c.Attempt}
			}
		}
		switch final {
		case intake.EventDead:
			fo.Routes = to(once)
		case intake.EventFiltered:
			fo.Routes = []intake.FanOutRoute{filteredRoute(e, once)}
		}
		if _, err := s.FanOut(ctx, t0, fo); err != nil {
			t.Fatal(err)
		}
		if final == intake.EventDead {
			settleRoute(t, s, t0, claimRoutes(t, s, t0, 100)[0], intake.DeliveryRetry)
		}
		eventIs(e, final, "settled")
		if _, err := s.FanOut(ctx, t0, fo); err == nil {
			t.Errorf("a %s event fanned out again", final)
		}
		eventIs(e, final, "after a refused fan-out")
		notClaimed(e, string(final))
		if err := s.RerouteEvent(ctx, intake.Scope{}, e.ID, t0); err != nil {
			t.Fatalf("re-route of a %s event: %v", final, err)
		}
		eventIs(e, intake.EventPending, "after its re-route")
	}
}

package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testOverview places messages in every state in three hours and around
// them, and events in every state that needs counting, and checks every
// figure of the overview exactly, for an org and for staff.
func testOverview(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "a"), newFixture(t, s, "b")
	since := t0.Add(-3 * time.Hour)
	at := func(h, min int) time.Time {
		return since.Add(time.Duration(h)*time.Hour + time.Duration(min)*time.Minute)
	}
	later := t0.Add(24 * time.Hour) // not due when claimed: stays queued

	plan := map[string]intake.MessageState{}
	put := func(f fixture, received time.Time, to intake.MessageState, replayOf string) *intake.Message {
		t.Helper()
		m := f.message("m"+intake.NewID(), received)
		m.ReplayOf = replayOf
		m.NextAttemptAt = since.Add(-time.Hour)
		if to == intake.MessageQueued {
			m.NextAttemptAt = later
		}
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		plan[m.ID] = to
		return m
	}
	first := put(a, at(0, 10), intake.MessageProcessed, "")
	put(a, at(0, 59), intake.MessageIgnored, "")
	put(a, at(1, 0), intake.MessageDead, "")
	put(a, at(1, 20), intake.MessageFailed, "")
	put(a, at(1, 40), intake.MessageProcessing, "")
	put(a, at(2, 30), intake.MessageQueued, "")
	put(a, at(2, 31), intake.MessageProcessed, "")
	put(a, at(2, 32), intake.MessageProcessed, first.ID) // a replay: not in the hours
	put(a, since.Add(-time.Minute), intake.MessageQueued, "")
	put(a, at(3, 0), intake.MessageProcessed, "") // the window's end is open
	fromB := put(b, at(0, 30), intake.MessageProcessed, "")
	put(b, at(0, 31), intake.MessageQueued, "")

	// a's first message makes three events, b's one that is not due yet.
	events := map[string][]intake.Event{first.ID: {a.event(first, "evt_1"), a.event(first, "evt_2"), a.event(first, "evt_3")}}
	eb := b.event(fromB, "evt_b")
	eb.NextAttemptAt = later
	events[fromB.ID] = []intake.Event{eb}
	for _, c := range claimAll(t, s, t0) {
		to := plan[c.Message.ID]
		if to == intake.MessageProcessing {
			continue
		}
		st := intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: to, Outcome: intake.OutcomeEvents, Events: events[c.Message.ID]}
		switch to {
		case intake.MessageIgnored:
			st.Outcome = "signature"
		case intake.MessageFailed:
			st.Outcome, st.NextAttemptAt = "", later
		case intake.MessageDead:
			st.Outcome = ""
		}
		if _, err := s.SettleMessage(ctx, t0, st); err != nil {
			t.Fatal(err)
		}
	}
	retryAt := t0.Add(-time.Minute) // due again at once
	consumer := a.consumer(t, s, "c", intake.Controls{})
	for _, c := range claimEvents(t, s, t0) {
		fo := intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt}
		if c.Event.ProviderEventID != "evt_1" {
			fo.Routes = to(consumer)
		}
		if _, err := s.FanOut(ctx, t0, fo); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range claimRoutes(t, s, t0, 100) {
		if c.Event.ProviderEventID == "evt_2" {
			settleRoute(t, s, retryAt.Add(-backoff.Base), c, intake.DeliveryRetry)
		} else {
			settleRoute(t, s, t0, c, intake.DeliveryHandled)
		}
	}
	// Due since before the window and never claimed: the oldest due work.
	late := a.message("late", since.Add(-2*time.Hour))
	if err := s.Ingest(ctx, late); err != nil {
		t.Fatal(err)
	}

	type counts = map[intake.MessageState]int
	q := intake.OverviewQuery{Since: since, Hours: 3, Now: t0, QueuedBefore: at(1, 0)}
	for _, tc := range []struct {
		name         string
		sc           intake.Scope
		hours        []counts
		live         counts
		queuedBefore int
		events       map[intake.EventState]int
	}{
		{"org a", intake.Scope{OrgID: a.org.ID},
			[]counts{{"processed": 1, "ignored": 1}, {"dead": 1, "failed": 1, "processing": 1}, {"queued": 1, "processed": 1}},
			counts{"queued": 3, "processing": 1, "failed": 1}, 2,
			map[intake.EventState]int{"no_consumer": 1, "retrying": 1}},
		{"staff", intake.Scope{},
			[]counts{{"processed": 2, "ignored": 1, "queued": 1}, {"dead": 1, "failed": 1, "processing": 1}, {"queued": 1, "processed": 1}},
			counts{"queued": 4, "processing": 1, "failed": 1}, 3,
			map[intake.EventState]int{"no_consumer": 1, "retrying": 1, "pending": 1}},
	} {
		got, err := s.Overview(ctx, tc.sc, q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got.Hours, tc.hours) || !reflect.DeepEqual(got.Live, tc.live) || got.QueuedBefore != tc.queuedBefore ||
			!reflect.DeepEqual(got.Events, tc.events) {
			t.Fatalf("%s: overview = %+v\nwant hours %v live %v queued before %d events %v", tc.name, got, tc.hours, tc.live, tc.queuedBefore, tc.events)
		}
		// The failed call is the oldest due delivery work, named by its
		// consumer; no event waits for its fan-out.
		if !got.OldestDueMessage.Equal(late.NextAttemptAt) || !got.OldestDueRoute.Equal(retryAt) || got.OldestDueRouteConsumer != consumer.ID ||
			!got.OldestDueEvent.IsZero() || got.OldestDueEventID != "" {
			t.Fatalf("%s: oldest due message %v, call %v of %q, event %v %q; want %v, %v of %q, none", tc.name, got.OldestDueMessage,
				got.OldestDueRoute, got.OldestDueRouteConsumer, got.OldestDueEvent, got.OldestDueEventID, late.NextAttemptAt, retryAt, consumer.ID)
		}
	}
	// Another org's work is not b's: none of it is due.
	got, err := s.Overview(ctx, intake.Scope{OrgID: b.org.ID}, q)
	if err != nil || !got.OldestDueMessage.IsZero() || !got.OldestDueRoute.IsZero() || got.Live[intake.MessageQueued] != 1 {
		t.Fatalf("org b: %+v %v", got, err)
	}
	for _, hours := range []int{0, intake.MaxOverviewHours + 1} {
		_, err := s.Overview(ctx, intake.Scope{}, intake.OverviewQuery{Since: since, Hours: hours, Now: t0})
		wantCode(t, err, intake.EINVALID)
	}
}

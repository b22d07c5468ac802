package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// retentionTests are the cases of intake.Retention: what each org keeps,
// and for how long.
var retentionTests = []struct {
	name string
	fn   func(*testing.T, intake.Store)
}{
	{"AMessageStaysWhileAnyOfItsEventsIsStillBeingRouted", testRetentionKeepsMessagesBeingRouted},
	{"AnOrgsRowsStayForItsOwnRetentionThoughBodiesGoSooner", testRowsStayForTheirOwnRetention},
}

// retain sets an org's body and row retention.
func retain(t *testing.T, s intake.Store, id string, body, rows time.Duration) {
	t.Helper()
	o := liveOrg(t, s, id)
	o.BodyRetention, o.Retention = body, rows
	if err := s.UpdateOrg(context.Background(), intake.Scope{}, o); err != nil {
		t.Fatal(err)
	}
}

// dropBodies drops the bodies past retention at now until want have gone,
// or for ten seconds, returning how many went: a body another process
// holds (PostgreSQL's search indexer, marking new bodies searchable) is
// skipped, not waited for, and dropped on a later round, once the
// indexer's transaction ends, which under load outlasts many quick rounds.
func dropBodies(t *testing.T, s intake.Store, now time.Time, def time.Duration, want int) int {
	t.Helper()
	total := 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := s.DropBodies(context.Background(), now, def, 100)
		if err != nil {
			t.Fatal(err)
		}
		if total += n; total >= want || time.Now().After(deadline) {
			return total
		}
		if n == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// deleteSettled runs one batch of the rows' retention at now.
func deleteSettled(t *testing.T, s intake.Store, now time.Time, def time.Duration) int {
	t.Helper()
	n, err := s.DeleteSettled(context.Background(), now, def, 100)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// kept reports whether the store still holds a message's row and its body.
func kept(s intake.Store, id string) (row, body bool) {
	ctx := context.Background()
	_, err := s.Message(ctx, intake.Scope{}, id)
	row = err == nil
	_, err = s.MessageBody(ctx, intake.Scope{}, id)
	return row, err == nil
}

// testRetentionKeepsMessagesBeingRouted: a settled message past its
// retention stays while one of its events is pending or retrying (the
// router still reads it), and goes once they are settled too.
func testRetentionKeepsMessagesBeingRouted(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{Retry: intake.RetryPolicy{Attempts: 3, Base: time.Hour}})
	routed := f.routed(t, s, 2, func(intake.Event) []intake.FanOutRoute { return to(c) })
	retrying, delivered := routed[0], routed[1]
	for _, rc := range claimRoutes(t, s, t0, 100) {
		outcome := intake.DeliveryHandled
		if rc.Event.ID == retrying.ID {
			outcome = intake.DeliveryRetry
		}
		settleRoute(t, s, t0, rc, outcome)
	}
	pending := f.pendingEvent(t, s)
	routing := map[intake.EventState]intake.Event{intake.EventPending: pending, intake.EventRetrying: retrying}
	for state, e := range routing {
		if st := eventState(t, s, e.ID); st != state {
			t.Fatalf("the %s event is %s", state, st)
		}
	}
	if st := eventState(t, s, delivered.ID); st != intake.EventDelivered {
		t.Fatalf("the delivered event is %s", st)
	}

	now := t0.Add(48 * time.Hour)
	if n := deleteSettled(t, s, now, 24*time.Hour); n != 1 {
		t.Fatalf("deleted %d messages, want the 1 whose event was delivered", n)
	}
	if row, _ := kept(s, delivered.MessageID); row {
		t.Fatal("the message whose event was delivered is kept")
	}
	for state, e := range routing {
		if row, _ := kept(s, e.MessageID); !row {
			t.Fatalf("the message of a %s event was deleted", state)
		}
	}

	// Once the retry is handled and the pending event goes to no one, both go.
	for _, rc := range claimRoutes(t, s, now, 100) {
		settleRoute(t, s, now, rc, intake.DeliveryHandled)
	}
	fanOut(t, s, pending, now, 0, nil)
	if n := deleteSettled(t, s, now, 24*time.Hour); n != 2 {
		t.Fatalf("deleted %d messages once their events settled, want 2", n)
	}
}

// testRowsStayForTheirOwnRetention: an org's rows stay for its row
// retention, not its body retention, though its own bodies, or another
// org's, go sooner; an org with no retention of its own takes the
// server's defaults.
func testRowsStayForTheirOwnRetention(t *testing.T, s intake.Store) {
	keep := newFixture(t, s, "keep")
	brief := newFixture(t, s, "brief")
	plain := newFixture(t, s, "plain")
	retain(t, s, keep.org.ID, time.Hour, 72*time.Hour)
	retain(t, s, brief.org.ID, 30*time.Minute, 2*time.Hour)
	mk := keep.ingest(t, s, `{"org":"keep"}`, t0)
	mb := brief.ingest(t, s, `{"org":"brief"}`, t0)
	mp := plain.ingest(t, s, `{"org":"plain"}`, t0)
	settleAll(t, s, t0)
	const bodyDef, rowsDef = 24 * time.Hour, 48 * time.Hour

	type state struct{ row, body bool }
	want := func(when string, wants map[*intake.Message]state) {
		t.Helper()
		for m, w := range wants {
			if row, body := kept(s, m.ID); row != w.row || body != w.body {
				t.Errorf("%s: %s's message kept row %v body %v, want row %v body %v", when, m.Body, row, body, w.row, w.body)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	// Three hours on: the bodies of keep and brief are past their
	// retention; only brief's row is.
	now := t0.Add(3 * time.Hour)
	if n := dropBodies(t, s, now, bodyDef, 2); n != 2 {
		t.Fatalf("three hours on: dropped %d bodies, want keep's and brief's", n)
	}
	if n := deleteSettled(t, s, now, rowsDef); n != 1 {
		t.Fatalf("three hours on: deleted %d messages, want brief's", n)
	}
	want("three hours on", map[*intake.Message]state{mk: {row: true}, mb: {}, mp: {row: true, body: true}})
	// Fifty hours on: plain's row is past the default; keep's is not.
	now = t0.Add(50 * time.Hour)
	if n := deleteSettled(t, s, now, rowsDef); n != 1 {
		t.Fatalf("fifty hours on: deleted %d messages, want plain's", n)
	}
	want("fifty hours on", map[*intake.Message]state{mk: {row: true}, mp: {}})
	now = t0.Add(73 * time.Hour)
	if n := deleteSettled(t, s, now, rowsDef); n != 1 {
		t.Fatalf("seventy-three hours on: deleted %d messages, want keep's", n)
	}
	want("seventy-three hours on", map[*intake.Message]state{mk: {}})
}

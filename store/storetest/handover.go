package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/handoff"
)

// testMessageHandover: a message handed over to the local worker commits under
// its first lease. No claim takes it while the lease holds, its attempt
// settles like a claimed one, and once the lease runs out unsettled (the
// process died) any claim takes it as the next attempt, with its body,
// while the lost attempt can no longer settle. Released (a drain), it is
// claimed at once as attempt 1.
func testMessageHandover(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	lease := time.Minute
	handOver := func(body string) *intake.Message {
		t.Helper()
		m := f.message(body, t0)
		if !handoff.NewMessages(1, lease).Reserve(m) {
			t.Fatal("an empty hand-off has no room")
		}
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	settled := handOver(`{"n":"settled"}`)
	got, err := s.Message(ctx, intake.Scope{}, settled.ID)
	if err != nil || got.State != intake.MessageProcessing || got.Attempt != 1 || !got.LeaseUntil.Equal(t0.Add(lease)) {
		t.Fatalf("stored = %+v %v, want processing at attempt 1 leased until %v", got, err, t0.Add(lease))
	}
	if c := claimAll(t, s, t0.Add(lease-time.Second)); len(c) != 0 {
		t.Fatalf("claimed %d handed-over messages while their lease holds", len(c))
	}
	first := intake.Claim{Message: *settled, Attempt: 1, LeaseUntil: settled.LeaseUntil}
	if _, err := s.SettleMessage(ctx, t0, processed(first, identity(settled, "evt_h1"), f.event(settled, "evt_h1"))); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Message(ctx, intake.Scope{}, settled.ID); got.State != intake.MessageProcessed || len(got.EventIDs) != 1 {
		t.Fatalf("settled handed-over message = %+v", got)
	}

	lost := handOver(`{"n":"lost"}`)
	again := claimOne(t, s, t0.Add(lease)) // the settled one is not among them
	if again.Message.ID != lost.ID || again.Attempt != 2 || string(again.Message.Body) != `{"n":"lost"}` ||
		again.Message.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("after the lease ran out = %+v, want %s as attempt 2 with its request", again, lost.ID)
	}
	stale := intake.Claim{Message: *lost, Attempt: 1}
	_, err = s.SettleMessage(ctx, t0, processed(stale, identity(lost, "evt_h2"), f.event(lost, "evt_h2")))
	wantCode(t, err, intake.ESTALE)
	if _, err := s.SettleMessage(ctx, t0, processed(again, identity(lost, "evt_h2"), f.event(lost, "evt_h2"))); err != nil {
		t.Fatal(err)
	}

	released := handOver(`{"n":"released"}`)
	if err := s.ReleaseMessage(ctx, t0, 0, released.ID, 1); err != nil {
		t.Fatal(err)
	}
	if c := claimOne(t, s, t0); c.Message.ID != released.ID || c.Attempt != 1 {
		t.Fatalf("after a release = %+v, want %s as attempt 1", c, released.ID)
	}
}

// testHandoverSharesCommitsWithQueued: handed-over and queued messages
// committed together all land, each as it was sent; a claim takes only the
// queued ones.
func testHandoverSharesCommitsWithQueued(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	const n = 40
	h := handoff.NewMessages(n, time.Minute)
	msgs := make([]*intake.Message, n)
	var wg sync.WaitGroup
	for i := range msgs {
		msgs[i] = f.message(fmt.Sprintf(`{"n":%d}`, i), t0)
		if i%2 == 0 && !h.Reserve(msgs[i]) {
			t.Fatal("no room in the hand-off")
		}
		wg.Go(func() {
			if err := s.Ingest(context.Background(), msgs[i]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	claimed := map[string]bool{}
	for _, c := range claimAll(t, s, t0) {
		claimed[c.Message.ID] = true
	}
	for i, m := range msgs {
		got, err := s.Message(context.Background(), intake.Scope{}, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		handed := i%2 == 0
		if claimed[m.ID] == handed || (handed && (got.Attempt != 1 || !got.LeaseUntil.Equal(t0.Add(time.Minute)))) {
			t.Errorf("message %d (handed over: %v): claimed %v, stored %s at attempt %d leased until %v", i, handed,
				claimed[m.ID], got.State, got.Attempt, got.LeaseUntil)
		}
	}
	if len(claimed) != n/2 {
		t.Fatalf("claimed %d, want the %d queued", len(claimed), n/2)
	}
}

// testIngestRefusesOtherStates: beyond queued, ingest records only a first
// attempt under a lease; anything else is refused and stores nothing.
func testIngestRefusesOtherStates(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	for name, set := range map[string]func(*intake.Message){
		"processing, no lease": func(m *intake.Message) { m.State, m.Attempt = intake.MessageProcessing, 1 },
		"processing at attempt 2": func(m *intake.Message) {
			m.State, m.Attempt, m.LeaseUntil = intake.MessageProcessing, 2, t0.Add(time.Minute)
		},
		"processing at attempt 0":   func(m *intake.Message) { m.State, m.LeaseUntil = intake.MessageProcessing, t0.Add(time.Minute) },
		"leased until its receipt":  func(m *intake.Message) { m.State, m.Attempt, m.LeaseUntil = intake.MessageProcessing, 1, t0 },
		"processed":                 func(m *intake.Message) { m.State, m.Attempt = intake.MessageProcessed, 1 },
		"failed":                    func(m *intake.Message) { m.State, m.Attempt = intake.MessageFailed, 1 },
		"dead with an expired body": func(m *intake.Message) { m.State, m.BodyExpired = intake.MessageDead, true },
	} {
		m := f.message(`{}`, t0)
		set(m)
		wantCode(t, s.Ingest(ctx, m), intake.EINVALID)
		if _, err := s.Message(ctx, intake.Scope{}, m.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
			t.Errorf("%s: refused ingest stored the message (err %v)", name, err)
		}
	}
}

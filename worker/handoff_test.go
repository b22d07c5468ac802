package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// countedClaims counts claims; with none set, every claim finds nothing.
type countedClaims struct {
	*sqlite.Store
	claims atomic.Int32
	none   bool
}

func (c *countedClaims) ClaimMessages(ctx context.Context, now time.Time, lease time.Duration, limit int, skip ...string) ([]intake.Claim, error) {
	c.claims.Add(1)
	if c.none {
		return nil, nil
	}
	return c.Store.ClaimMessages(ctx, now, lease, limit, skip...)
}

// handOver commits a message as ingress does when the worker has room:
// under its first lease. give says whether it then reaches the worker (a
// process that dies after the commit never gives it).
func (e *env) handOver(t *testing.T, h *handoff.Messages, body string, give bool) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: e.ep.OrgID, ConnectionID: e.conn.ID, EndpointID: e.ep.ID,
		Method: "POST", Header: http.Header{"X-Test-Secret": {"new-secret"}}, Body: []byte(body),
		Digest: hex.EncodeToString(sum[:]), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if !h.Reserve(m) {
		t.Fatal("no room in the hand-off")
	}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if give {
		h.Give(m)
	}
	return m.ID
}

func TestAHandedOverMessageIsProcessedWithNoClaim(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	store := &countedClaims{Store: e.store}
	w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Poll: time.Hour, Handoff: h})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	var ids []string
	for _, body := range []string{`{"id":"evt_1","type":"paid"}`, `{"id":"evt_2","type":"paid"}`, `{"id":"evt_3","type":"paid"}`} {
		ids = append(ids, e.handOver(t, h, body, true))
	}
	for _, id := range ids {
		testkit.WaitFor(t, "handed-over message processed", func() bool { return e.message(t, id).State == intake.MessageProcessed })
	}
	cancel()
	<-done
	for _, id := range ids {
		if m := e.message(t, id); m.Attempt != 1 || len(m.EventIDs) != 1 {
			t.Fatalf("message = %+v, want processed at attempt 1 into one event", m)
		}
	}
	// The one claim is Run's first, before anything was handed over; the
	// commits woke no one.
	if n := store.claims.Load(); n != 1 {
		t.Fatalf("%d claims for three handed-over messages, want only Run's first", n)
	}
}

func TestAHandedOverMessageWhoseProcessDiedIsClaimedAsTheNextAttempt(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	id := e.handOver(t, h, `{"id":"evt_1","type":"paid"}`, false)
	if n := e.run(t); n != 0 {
		t.Fatalf("claimed %d while the dead process's lease holds", n)
	}
	e.clock.Advance(time.Minute)
	if n := e.run(t); n != 1 {
		t.Fatalf("claimed %d once the lease ran out, want 1", n)
	}
	if m := e.message(t, id); m.State != intake.MessageProcessed || m.Attempt != 2 || len(m.EventIDs) != 1 {
		t.Fatalf("message = %+v, want processed at attempt 2", m)
	}
}

// The lost first attempt counts like a claimed one: a message handed over
// and then taken five times by processes that died is dead at the
// seventh.
func TestAHandedOverAttemptThatNeverSettlesSpendsAnAttempt(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	id := e.handOver(t, h, `{"id":"evt_1","type":"paid"}`, false)
	for range intake.DefaultMaxAttempts - 1 {
		e.clock.Advance(time.Minute)
		if c, err := e.store.ClaimMessages(context.Background(), e.clock.Now(), time.Minute, 10); err != nil || len(c) != 1 {
			t.Fatalf("claim = %d, %v", len(c), err)
		}
	}
	e.clock.Advance(time.Minute)
	e.run(t)
	if m := e.message(t, id); m.State != intake.MessageDead || m.ErrorCode != intake.ErrCodeLeaseExpired {
		t.Fatalf("message = %+v, want dead with %s", m, intake.ErrCodeLeaseExpired)
	}
}

func TestADrainingWorkerReleasesWhatWasHandedOverButNotStarted(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	first := e.handOver(t, h, `{"id":"evt_1","type":"paid"}`, true)
	second := e.handOver(t, h, `{"id":"evt_2","type":"paid"}`, true)
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Handoff: h})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before it took anything
	w.Run(ctx)
	claims, err := e.store.ClaimMessages(context.Background(), e.clock.Now(), time.Minute, 10)
	if err != nil || len(claims) != 2 {
		t.Fatalf("claimed %d (%v) at once after the drain, want both", len(claims), err)
	}
	for _, c := range claims {
		if (c.Message.ID != first && c.Message.ID != second) || c.Attempt != 1 {
			t.Fatalf("claim = %s attempt %d, want a released one as attempt 1", c.Message.ID, c.Attempt)
		}
	}
	// Their room is free again.
	for i := range 8 {
		if !h.Reserve(&intake.Message{OrgID: fmt.Sprint("org", i)}) {
			t.Fatal("the drained hand-off kept room")
		}
	}
}

func TestAHandedOverMessageWhoseLeaseRanOutWhileWaitingIsLeftToAClaim(t *testing.T) {
	e := setup(t)
	h := handoff.NewMessages(8, time.Minute)
	id := e.handOver(t, h, `{"id":"evt_1","type":"paid"}`, true)
	e.clock.Advance(time.Minute) // another process may claim it now
	store := &countedClaims{Store: e.store, none: true}
	w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Poll: time.Hour, Handoff: h})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	// Run takes what was handed over before its first claim.
	testkit.WaitFor(t, "the first claim", func() bool { return store.claims.Load() > 0 })
	cancel()
	<-done
	if m := e.message(t, id); m.State != intake.MessageProcessing || m.Attempt != 1 {
		t.Fatalf("message = %+v, want left processing at attempt 1 for a claim", m)
	}
}

package ingress_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/testkit"
)

func TestIngressHandsOverWhileTheWorkerHasRoomThenQueues(t *testing.T) {
	h := handoff.NewMessages(1, 30*time.Second)
	e := setup(t, ingress.Config{Handoff: h}, nil)
	for _, body := range []string{`{"n":1}`, `{"n":2}`} {
		if w := e.post("/webhooks/"+e.token, strings.NewReader(body), nil); w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
	}
	var c intake.Claim
	select {
	case c = <-h.Claims():
	default:
		t.Fatal("nothing was handed over")
	}
	if string(c.Message.Body) != `{"n":1}` || c.Attempt != 1 || !c.LeaseUntil.Equal(e.clock.Now().Add(30*time.Second)) {
		t.Fatalf("handed over %q as attempt %d leased until %v", c.Message.Body, c.Attempt, c.LeaseUntil)
	}
	byID := map[string]intake.Message{}
	for _, m := range e.stored(t) {
		byID[m.ID] = m
	}
	if m := byID[c.Message.ID]; m.State != intake.MessageProcessing || m.Attempt != 1 || !m.LeaseUntil.Equal(c.LeaseUntil) {
		t.Fatalf("handed-over message stored as %+v", m)
	}
	delete(byID, c.Message.ID)
	if len(byID) != 1 {
		t.Fatalf("%d other messages stored, want the one that found no room", len(byID))
	}
	for _, m := range byID {
		if m.State != intake.MessageQueued || m.Attempt != 0 {
			t.Fatalf("message with no room stored as %+v, want queued", m)
		}
	}
	h.Taken(c.Message.OrgID)
	if !h.Reserve(&intake.Message{OrgID: c.Message.OrgID}) {
		t.Fatal("taking the message did not free its room")
	}
}

func TestIngressGivesBackTheRoomOfACommitThatFailed(t *testing.T) {
	h := handoff.NewMessages(1, 30*time.Second)
	e := setup(t, ingress.Config{}, nil)
	broken := ingress.New(ingress.Config{Store: failingStore{e.store}, Clock: e.clock, Handoff: h})
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", broken)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/webhooks/"+e.token, strings.NewReader("{}")))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d", w.Code)
	}
	select {
	case c := <-h.Claims():
		t.Fatalf("a message whose commit failed was handed over: %s", c.Message.ID)
	default:
	}
	if !h.Reserve(&intake.Message{}) {
		t.Fatal("the failed commit kept its room")
	}
}

// heldStore holds every commit until release closes.
type heldStore struct {
	intake.Store
	release chan struct{}
}

func (s heldStore) Ingest(ctx context.Context, m *intake.Message) error {
	<-s.release
	return s.Store.Ingest(ctx, m)
}

func TestIngressCountsTheRequestsWaitingForTheirCommit(t *testing.T) {
	p := pressure.New(2)
	e := setup(t, ingress.Config{}, nil)
	held := heldStore{Store: e.store, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: held, Clock: e.clock, Pressure: p}))
	codes := make(chan int, 3)
	for range 3 {
		go func() {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest("POST", "/webhooks/"+e.token, strings.NewReader("{}")))
			codes <- w.Code
		}()
	}
	testkit.WaitFor(t, "three requests waiting for their commit", func() bool { return p.Waiting() == 3 })
	if !p.High() {
		t.Fatal("three requests wait at threshold 2, and ingest is not under pressure")
	}
	close(held.release)
	for range 3 {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	if p.Waiting() != 0 || p.High() {
		t.Fatalf("%d still counted waiting once every commit returned", p.Waiting())
	}
	if n := len(e.stored(t)); n != 3 {
		t.Fatalf("%d messages stored, want 3", n)
	}
}

package notify_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/internal/token"
)

// settleOne ingests a message at the env's endpoint, claims it and settles
// it as st makes it.
func (e *env) settleOne(st func(c intake.Claim) intake.Settlement) string {
	e.t.Helper()
	ctx := e.t.Context()
	m := &intake.Message{ID: intake.NewID(), OrgID: e.org.ID, ConnectionID: e.ep.ConnectionID, EndpointID: e.ep.ID, Method: "POST",
		Header: http.Header{}, Body: []byte(`{}`), Digest: intake.NewID(), ReceivedAt: e.clock.Now(), State: intake.MessageQueued,
		MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(ctx, m); err != nil {
		e.t.Fatal(err)
	}
	claims, err := e.store.ClaimMessages(ctx, e.clock.Now(), time.Minute, 1)
	if err != nil || len(claims) != 1 {
		e.t.Fatalf("claimed %d, %v", len(claims), err)
	}
	if _, err := e.store.SettleMessage(ctx, e.clock.Now(), st(claims[0])); err != nil {
		e.t.Fatal(err)
	}
	return m.ID
}

func TestADeadMessageIsNotifiedAboutItsEndpoint(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeMessageDead)
	id := e.settleOne(func(c intake.Claim) intake.Settlement {
		return intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageDead, Outcome: "error",
			ErrorCode: intake.ErrCodeScript, ErrorMessage: "interpret threw"}
	})
	e.poll()
	calls := url.got()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	n := verify(t, calls[0], t0)
	if n.Type != intake.NoticeMessageDead || n.Subject != e.ep.ID || n.Count != 1 ||
		n.Detail != "message "+id+" is dead (script): interpret threw" {
		t.Fatalf("notification = %+v", n)
	}
}

func TestABurstOfForgedMessagesIsOneSignatureFailuresNotification(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeSignatureFailures)
	for range 7 {
		e.settleOne(func(c intake.Claim) intake.Settlement {
			return intake.Settlement{MessageID: c.Message.ID, Attempt: c.Attempt, To: intake.MessageIgnored,
				Outcome: intake.OutcomeSignature, ErrorMessage: "signature: no secret matched"}
		})
		e.clock.Advance(time.Second)
	}
	e.poll()
	calls := url.got()
	if len(calls) != 1 {
		t.Fatalf("%d calls for a burst of 7, want 1", len(calls))
	}
	if n := verify(t, calls[0], e.clock.Now()); n.Type != intake.NoticeSignatureFailures || n.Subject != e.ep.ID || n.Count != 7 ||
		!strings.Contains(n.Detail, "no secret matched") {
		t.Fatalf("notification = %+v", n)
	}
}

func TestTheStorageQuotaRefusingIngressIsNotified(t *testing.T) {
	e := newEnv(t, delivery.Policy{})
	url := newReceiver(t)
	e.subscribe(e.org, url.URL, "", intake.NoticeStorageQuota)
	tok := token.New("")
	ep := e.ep
	ep.ID, ep.TokenHash = intake.NewID(), token.Hash(tok)
	if err := e.store.CreateEndpoint(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	q := &ingress.Quota{Limit: 1}
	if err := q.Sample(t.Context(), e.store); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", ingress.New(ingress.Config{Store: e.store, Clock: e.clock, Quota: q}))
	for range 3 {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("POST", "/webhooks/"+tok, strings.NewReader("{}")))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("over quota: %d", w.Code)
		}
	}
	e.poll()
	calls := url.got()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	if n := verify(t, calls[0], t0); n.Type != intake.NoticeStorageQuota || n.Subject != "storage" || n.OrgID != e.org.ID || n.Count != 1 {
		t.Fatalf("notification = %+v", n)
	}
}

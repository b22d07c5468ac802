package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
)

// TestRunCountsLostDuplicatedAndRedeliveredWebhooks runs the checker
// against a stand-in for intake that acknowledges every webhook but loses
// one, delivers one as two events, and calls the consumer twice with one
// event: the tally names each, and nothing else.
func TestRunCountsLostDuplicatedAndRedeliveredWebhooks(t *testing.T) {
	sink := &Sink{Key: func(b []byte) string {
		var env struct{ Data struct{ Delivery string } }
		json.Unmarshal(b, &env)
		return env.Data.Delivery
	}}
	consumer := httptest.NewServer(sink)
	defer consumer.Close()
	proxy, err := NewProxy("consumer", strings.TrimPrefix(consumer.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	deliver := func(id, webhookID string) {
		req, _ := http.NewRequest("POST", "http://"+proxy.Addr, bytes.NewReader(fmt.Appendf(nil, `{"data":{"delivery":%q}}`, id)))
		req.Header.Set("webhook-id", webhookID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	run := Run{
		Post: func(_ context.Context, id string) (int, error) {
			switch {
			case strings.HasSuffix(id, "-3"): // acknowledged, never delivered
			case strings.HasSuffix(id, "-5"): // two events for one webhook
				deliver(id, "evt-a-"+id)
				deliver(id, "evt-b-"+id)
			case strings.HasSuffix(id, "-7"): // one event, called twice
				deliver(id, "evt-"+id)
				deliver(id, "evt-"+id)
			default:
				deliver(id, "evt-"+id)
			}
			return http.StatusOK, nil
		},
		Key:   func(id string) string { return id },
		Proxy: proxy, Sink: sink, Before: 10, Deadline: 300 * time.Millisecond,
	}
	tally, err := run.Do(context.Background(), Network[0])
	if err != nil {
		t.Fatal(err)
	}
	// Ten before the fault, one when ingress acknowledges again.
	if tally.Posted != 11 || tally.Acked != 11 || tally.Delivered != 10 || tally.Lost != 1 || tally.Twice != 1 || tally.Redeliveries != 1 {
		t.Errorf("tally %+v, want 11 posted and acknowledged, 10 delivered, 1 lost, 1 twice, 1 redelivery", tally)
	}
	if tally.Recover != 0 {
		t.Errorf("recovered after %v with a webhook lost", tally.Recover)
	}
}

// TestTallyBadIsEveryAnswerButTwoHundredsAnd503: a 500 while the store
// cannot make a webhook durable is a failure; 503 is the answer.
func TestTallyBadIsEveryAnswerButTwoHundredsAnd503(t *testing.T) {
	tally := Tally{Answers: map[int]int{200: 5, 202: 1, 503: 3, 500: 2, 429: 1}}
	bad := tally.Bad()
	if len(bad) != 2 || bad[500] != 2 || bad[429] != 1 {
		t.Errorf("bad answers %v, want 500×2 and 429×1", bad)
	}
}

// TestRunCountsWhatAnInboxApplicationAppliedTwiceOrNever runs the checker
// with an App as the consumer, against a stand-in for intake that
// delivers one webhook as two events, calls once more under one
// webhook-id (the application dedupes it), signs one call under another
// secret (refused, never applied) and acknowledges one it never delivers.
func TestRunCountsWhatAnInboxApplicationAppliedTwiceOrNever(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sink := &Sink{Key: func(b []byte) string {
		var env struct{ Data struct{ Delivery string } }
		json.Unmarshal(b, &env)
		return env.Data.Delivery
	}}
	app, err := NewApp(t.TempDir(), sink)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Trust(secret); err != nil {
		t.Fatal(err)
	}
	consumer := httptest.NewServer(app)
	defer consumer.Close()
	proxy, err := NewProxy("consumer", strings.TrimPrefix(consumer.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	deliver := func(id, webhookID, secret string) int {
		body := fmt.Appendf(nil, `{"id":%q,"type":"github.push","data":{"delivery":%q}}`, webhookID, id)
		now := time.Now().Unix()
		sig, err := delivery.Sign(secret, webhookID, now, body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", "http://"+proxy.Addr, bytes.NewReader(body))
		req.Header.Set("webhook-id", webhookID)
		req.Header.Set("webhook-timestamp", fmt.Sprint(now))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	run := Run{
		Post: func(_ context.Context, id string) (int, error) {
			switch {
			case strings.HasSuffix(id, "-2"): // two events for one webhook: applied twice
				deliver(id, "evt-a-"+id, secret)
				deliver(id, "evt-b-"+id, secret)
			case strings.HasSuffix(id, "-4"): // one event, called twice: applied once
				deliver(id, "evt-"+id, secret)
				deliver(id, "evt-"+id, secret)
			case strings.HasSuffix(id, "-6"): // signed under another secret: refused
				if status := deliver(id, "evt-"+id, "whsec_b3RoZXJvdGhlcm90aGVyb3RoZXI="); status != http.StatusUnauthorized {
					t.Errorf("a call signed under another secret answered %d, want 401", status)
				}
			case strings.HasSuffix(id, "-8"): // acknowledged, never delivered
			default:
				if status := deliver(id, "evt-"+id, secret); status != http.StatusOK {
					t.Errorf("a signed call answered %d, want 200", status)
				}
			}
			return http.StatusOK, nil
		},
		Key:   func(id string) string { return id },
		Proxy: proxy, Sink: sink, App: app, Before: 10, Deadline: 300 * time.Millisecond,
	}
	tally, err := run.Do(context.Background(), Network[0])
	if err != nil {
		t.Fatal(err)
	}
	if tally.AppliedTwice != 1 || tally.Unapplied != 2 || tally.Twice != 1 || tally.Redeliveries != 1 || tally.Lost != 1 {
		t.Errorf("tally %+v, want 1 applied twice, 2 never applied, 1 twice, 1 redelivery, 1 lost", tally)
	}
	if row := tally.Row("consumer link", "sqlite"); !strings.Contains(row, "| 1 | 1 | 1 |") {
		t.Errorf("row %q does not give twice, applied twice and redelivered as 1, 1, 1", row)
	}
	if row := (Tally{Fault: "none", Answers: map[int]int{}}).Row("nats", "sqlite"); !strings.Contains(row, "| 0 | – | 0 |") {
		t.Errorf("a row without an application %q does not give applied twice as –", row)
	}
}

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

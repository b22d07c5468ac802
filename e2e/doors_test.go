package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The doors of DESIGN §26 on the real binary, at a size CI runs: org B
// goes past a budget the server was started with, B is answered or made to
// wait as the budget says, and org A's work goes on meanwhile.

// flood is an interpret script making 1 000 events of each message.
const flood = `function interpret(r){var e=[];for(var i=0;i<1000;i++)e.push({type:"flood",data:{i:i}});return e}`

// TestAnOrgPastItsEventsBudgetWaitsQueuedWhileAnotherOrgsWebhookIsDelivered:
// B's messages make 1 000 events each, past its budget of 1 000 a second
// (a burst of 1 000). Every one of B's webhooks is acknowledged; past the
// budget its messages wait queued, and A's webhook is delivered while some
// of them still wait. Then every one of B's messages is processed, each
// with its 1 000 events: nothing refused, nothing lost.
func TestAnOrgPastItsEventsBudgetWaitsQueuedWhileAnotherOrgsWebhookIsDelivered(t *testing.T) {
	fast, delivered := newSignallingReceiver(t)

	s := start(t, t.TempDir(), "--org-events-per-sec", "1000", "--org-events-burst", "1000")
	a, b := newNoisyOrg(t, s, "alpha"), newNoisyOrg(t, s, "bravo")
	_, aURL := a.endpoint(t, s, map[string]any{"provider": "github", "name": "gh", "secrets": []string{githubSecret}}, 0)
	a.consumer(t, s, "alpha-app", fast.URL, "", "github.*")
	bEndpoint, bURL := b.endpoint(t, s, map[string]any{"provider": "none", "name": "flood", "config": map[string]any{"script": flood}}, 0)

	const messages = 8
	posted := time.Now()
	for i := range messages {
		postJSON(t, bURL, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	eventually(t, 20*time.Second, "B's first message processed", func() bool {
		return s.countMessages(t, bEndpoint, "processed") > 0
	})

	resp, err := http.DefaultClient.Do(githubDelivery(aURL, "alpha-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		t.Fatalf("A's webhook was not delivered within 10s of B's events budget running out")
	}
	if n := s.countMessages(t, bEndpoint, "processed"); n >= messages {
		t.Fatalf("A's webhook was delivered only once all %d of B's messages were processed: B's budget held none back", n)
	}

	eventually(t, 60*time.Second, "every one of B's messages processed", func() bool {
		return s.countMessages(t, bEndpoint, "processed") == messages
	})
	// 8 000 events at 1 000 a second, less the burst and the one message
	// an org may overshoot by, take 6 s at least: a slower machine only
	// takes longer.
	if took := time.Since(posted); took < 5*time.Second {
		t.Fatalf("B's %d messages of 1 000 events were processed in %v: faster than its budget of 1 000 events a second allows", messages, took)
	}
	if n := value(s.scrape(t), "intake_org_events_throttled_total"); n < 1 {
		t.Fatalf("intake_org_events_throttled_total = %v, want B counted past its budget", n)
	}
	var page struct{ Items []message }
	s.api(t, "GET", "/api/v1/messages?limit=500&endpoint_id="+bEndpoint, nil, &page)
	for _, m := range page.Items {
		var detail struct {
			State    string
			EventIDs []string `json:"event_ids"`
		}
		s.api(t, "GET", "/api/v1/messages/"+m.ID, nil, &detail)
		if detail.State != "processed" || len(detail.EventIDs) != 1000 {
			t.Fatalf("B's message %s is %s with %d events, want processed with 1000", m.ID, detail.State, len(detail.EventIDs))
		}
	}
}

// TestAnOrgPastItsConsumerTestsIsAnswered429WhileAnotherOrgsTestAnswers:
// with --consumer-tests-per-org 2, B's two tests to a target that never
// answers hold both of B's places; B's third is answered 429 with
// Retry-After, and A's test to its own consumer answers meanwhile.
func TestAnOrgPastItsConsumerTestsIsAnswered429WhileAnotherOrgsTestAnswers(t *testing.T) {
	hanging := newHoldingReceiver(t)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer fast.Close()

	s := start(t, t.TempDir(), "--consumer-tests-per-org", "2", "--delivery-timeout", "60s")
	a, b := newNoisyOrg(t, s, "alpha"), newNoisyOrg(t, s, "bravo")
	aConsumer := a.consumer(t, s, "alpha-app", fast.URL, "", "github.*")
	bConsumer := b.consumer(t, s, "bravo-app", hanging.URL, "", "none.*")

	test := func(key, consumer string, timeout time.Duration) (*http.Response, string, error) {
		req, _ := http.NewRequest("POST", s.url+"/api/v1/consumers/"+consumer+"/test", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body), nil
	}
	for range 2 {
		go test(b.key, bConsumer, time.Minute) // held until the test ends
	}
	eventually(t, 10*time.Second, "B's two tests held by its target", func() bool { return hanging.got.Load() == 2 })

	resp, body, err := test(b.key, bConsumer, 10*time.Second)
	if err != nil {
		t.Fatalf("B's third test: %v, want 429", err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("B's third test answered %d (Retry-After %q) %s, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, body, err = test(a.key, aConsumer, 10*time.Second)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"status_code":200`) {
		t.Fatalf("A's test while B's are held: %v %v %s, want 200 delivered", err, resp, body)
	}
	if got := hanging.got.Load(); got != 2 {
		t.Fatalf("B's target got %d calls, want the 2 B's places allow", got)
	}
}

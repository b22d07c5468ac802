package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// recordingConsumer answers each path with the statuses it is given in
// turn (200 once they run out) and records when every call came.
type recordingConsumer struct {
	mu      sync.Mutex
	answers map[string][]int // path → statuses still to give
	header  http.Header      // sent with every non-2xx answer
	calls   map[string][]time.Time
}

func newRecordingConsumer(t *testing.T, answers map[string][]int, header http.Header) (*recordingConsumer, string) {
	c := &recordingConsumer{answers: answers, header: header, calls: map[string][]time.Time{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *recordingConsumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	c.mu.Lock()
	c.calls[r.URL.Path] = append(c.calls[r.URL.Path], time.Now())
	status := http.StatusOK
	if q := c.answers[r.URL.Path]; len(q) > 0 {
		status, c.answers[r.URL.Path] = q[0], q[1:]
	}
	c.mu.Unlock()
	if status >= 300 {
		for k, v := range c.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(status)
}

func (c *recordingConsumer) callsTo(path string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.calls[path]...)
}

// deliveredEvent posts one GitHub delivery and waits until its one event
// is delivered.
func deliveredEvent(t *testing.T, s *server, path string) eventDetail {
	t.Helper()
	if status, b := postGitHub(t, http.DefaultClient, s.url+path, "retry-e2e-1"); status != http.StatusOK {
		t.Fatalf("ingress answered %d %s", status, b)
	}
	var d eventDetail
	eventually(t, 60*time.Second, "the event delivered", func() bool {
		evs := s.events(t)
		if len(evs) != 1 {
			return false
		}
		if d = s.event(t, evs[0].ID); d.State == "dead" {
			t.Fatalf("event dead: %+v", d)
		}
		return d.State == "delivered"
	})
	return d
}

// TestConsumerThatHandledAnEventIsNotCalledAgainWhileAnotherRetries routes
// one event to two consumers: one handles it at once, the other fails
// twice. The event is routed three times, yet the first consumer is called
// once.
func TestConsumerThatHandledAnEventIsNotCalledAgainWhileAnotherRetries(t *testing.T) {
	cons, url := newRecordingConsumer(t, map[string][]int{"/flaky": {500, 503}}, nil)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	for _, name := range []string{"steady", "flaky"} {
		s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": name, "app": name,
			"url": url + "/" + name, "event_types": []string{"github.issues.*"}}, nil)
	}
	d := deliveredEvent(t, s, path)
	if n := len(cons.callsTo("/flaky")); n != 3 {
		t.Fatalf("the failing consumer was called %d times, want 3 (two failures, then handled)", n)
	}
	if n := len(cons.callsTo("/steady")); n != 1 {
		t.Errorf("the consumer that handled the event at once was called %d times over 3 routing attempts, want 1", n)
	}
	outcomes := map[string]int{}
	for _, del := range d.Deliveries {
		outcomes[del.Outcome]++
	}
	if len(d.Deliveries) != 4 || outcomes["handled"] != 2 || outcomes["retry"] != 2 {
		t.Errorf("deliveries %+v, want one handled for the steady consumer, two retries and one handled for the other", d.Deliveries)
	}
}

// TestConsumerRetryAfterIsHonoured has a consumer answer 503 with
// Retry-After: 3 on a server whose own backoff would retry within 100 ms:
// the next call waits the three seconds the consumer asked for.
func TestConsumerRetryAfterIsHonoured(t *testing.T) {
	const asked = 3 * time.Second
	cons, url := newRecordingConsumer(t, map[string][]int{"/busy": {503}}, http.Header{"Retry-After": {"3"}})
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "busy", "app": "busy",
		"url": url + "/busy", "event_types": []string{"github.issues.*"}}, nil)
	d := deliveredEvent(t, s, path)
	calls := cons.callsTo("/busy")
	if len(calls) != 2 {
		t.Fatalf("the consumer was called %d times, want 2 (503, then handled)", len(calls))
	}
	// The retry is scheduled from the 503's arrival, after the first call
	// began: the gap can only be longer than what was asked.
	if gap := calls[1].Sub(calls[0]); gap < asked {
		t.Errorf("the retry came %v after a 503 asking for %v", gap, asked)
	}
	if len(d.Deliveries) != 2 || d.Deliveries[0].StatusCode != 503 || d.Deliveries[1].Outcome != "handled" {
		t.Errorf("deliveries %+v, want a 503 then handled", d.Deliveries)
	}
}

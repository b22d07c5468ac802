package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// eventDetail is GET /api/v1/events/{id}: an event with its deliveries.
type eventDetail struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	Deliveries []struct {
		Attempt    int    `json:"attempt"`
		Outcome    string `json:"outcome"`
		StatusCode int    `json:"status_code"`
	} `json:"deliveries"`
}

func (s *server) event(t *testing.T, id string) eventDetail {
	t.Helper()
	var e eventDetail
	s.api(t, "GET", "/api/v1/events/"+id, nil, &e)
	return e
}

// firstOrgID is the id of the org setupGitHub created.
func firstOrgID(t *testing.T, s *server) string {
	t.Helper()
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	if len(orgs.Items) == 0 {
		t.Fatal("no org")
	}
	return orgs.Items[0].ID
}

// postGitHub posts one signed GitHub delivery and returns the status and
// body of the answer.
func postGitHub(t *testing.T, client *http.Client, url, id string) (int, []byte) {
	t.Helper()
	resp, err := client.Do(githubDelivery(url, id))
	if err != nil {
		t.Fatalf("post %s: %v", id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestConsumerDownThenBackReceivesEveryEventNoneDead registers a consumer
// whose port refuses connections, posts webhooks, waits until the refusals
// open its circuit breaker, then brings the consumer up on that port: the
// breaker's probe succeeds, every event ends delivered, none dead, and the
// consumer sees each event id.
func TestConsumerDownThenBackReceivesEveryEventNoneDead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the consumer is down: connections to addr are refused

	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var cons struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "issues", "app": "tracker",
		"url": "http://" + addr + "/hooks", "event_types": []string{"github.issues.*"}}, &cons)
	consumerID := cons.ID

	const n = 20
	for i := range n {
		if status, b := postGitHub(t, http.DefaultClient, s.url+path, fmt.Sprintf("down-%d", i)); status != http.StatusOK {
			t.Fatalf("ingress answered %d %s", status, b)
		}
	}

	// Refused calls open the consumer's circuit breaker after ten in a row:
	// from then on its deliveries wait (pending, or retrying after a
	// refusal) without spending attempts, and one probe call goes after 30 s.
	var evs []event
	eventually(t, 30*time.Second, "every event waiting, the breaker open", func() bool {
		evs = s.events(t)
		if len(evs) != n {
			return false
		}
		for _, e := range evs {
			if e.State == "dead" || e.State == "delivered" {
				t.Fatalf("event %s is %s while its only consumer is down", e.ID, e.State)
			}
			d := s.event(t, e.ID)
			refused := 0
			for _, del := range d.Deliveries {
				if del.Outcome != "retry" {
					t.Fatalf("event %s: delivery outcome %q while the consumer is down", e.ID, del.Outcome)
				}
				refused++
			}
			if d.State == "retrying" && refused < 1 {
				t.Fatalf("event %s retrying with no refused delivery", e.ID)
			}
		}
		var h struct{ State string }
		s.api(t, "GET", "/api/v1/consumers/"+consumerID+"/health", nil, &h)
		return h.State == "tripped"
	})

	var mu sync.Mutex
	got := map[string]int{} // webhook-id → calls
	consumer := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.Header.Get("webhook-id")]++
		mu.Unlock()
	})}
	// The port was free a moment ago; another process may hold it briefly.
	eventually(t, 5*time.Second, "the consumer listening on its port again", func() bool {
		ln, err = net.Listen("tcp", addr)
		return err == nil
	})
	go consumer.Serve(ln)
	defer consumer.Close()

	eventually(t, 90*time.Second, "every event delivered once the breaker's probe succeeds", func() bool {
		for _, e := range s.events(t) {
			if e.State == "dead" {
				t.Fatalf("event %s dead although its consumer came back", e.ID)
			}
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	twice, attempts := 0, 0
	for _, e := range evs {
		d := s.event(t, e.ID)
		handled := 0
		for _, del := range d.Deliveries {
			if del.Outcome == "handled" {
				handled++
			}
		}
		if handled != 1 || d.Deliveries[len(d.Deliveries)-1].Outcome != "handled" {
			t.Errorf("event %s: deliveries %+v, want retries then one handled", e.ID, d.Deliveries)
		}
		attempts += len(d.Deliveries)
		switch calls := got[e.ID]; {
		case calls == 0:
			t.Errorf("the consumer never got event %s", e.ID)
		case calls > 1:
			twice++
		}
	}
	if len(got) != n {
		t.Errorf("the consumer got %d distinct event ids, want %d", len(got), n)
	}
	t.Logf("%d events delivered after %d recorded attempts; %d delivered more than once", n, attempts, twice)
}

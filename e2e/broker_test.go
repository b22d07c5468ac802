package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Helpers the tests of every broker destination share.

// addBrokerConsumer registers a consumer of every GitHub event at url and
// returns its id and signing secret.
func addBrokerConsumer(t *testing.T, s *server, url string, extra map[string]any) (id, secret string) {
	t.Helper()
	in := map[string]any{"org_id": firstOrgID(t, s), "name": "bus", "app": "bus", "url": url,
		"event_types": []string{"github.*"}}
	for k, v := range extra {
		in[k] = v
	}
	var cons struct {
		ID            string `json:"id"`
		SigningSecret string `json:"signing_secret"`
	}
	if status := s.api(t, "POST", "/api/v1/consumers", in, &cons); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("add consumer %s: %d", url, status)
	}
	return cons.ID, cons.SigningSecret
}

// postGitHubN posts n signed GitHub deliveries, ids prefix0 to prefix(n-1).
func postGitHubN(t *testing.T, s *server, path, prefix string, n int) {
	t.Helper()
	for i := range n {
		if status, b := postGitHub(t, http.DefaultClient, s.url+path, prefix+strconv.Itoa(i)); status != http.StatusOK && status != http.StatusAccepted {
			t.Fatalf("ingress answered %d %s", status, b)
		}
	}
}

// consumerCount is how many consumers the server has.
func (s *server) consumerCount(t *testing.T) int {
	t.Helper()
	var page struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/consumers", nil, &page)
	return len(page.Items)
}

// refuseBrokerConsumer posts a consumer at url and wants it refused with
// 400, nothing saved; it returns the answer's body.
func refuseBrokerConsumer(t *testing.T, s *server, url string) string {
	t.Helper()
	before := s.consumerCount(t)
	in, _ := json.Marshal(map[string]any{"org_id": firstOrgID(t, s), "name": "bad", "app": "bad", "url": url,
		"event_types": []string{"github.*"}})
	req, _ := http.NewRequest("POST", s.url+"/api/v1/consumers", bytes.NewReader(in))
	req.Header.Set("Authorization", "Bearer "+staffToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("consumer at %s: %d %s, want 400", url, resp.StatusCode, b)
	}
	if after := s.consumerCount(t); after != before {
		t.Errorf("consumer at %s refused, yet %d consumers saved", url, after-before)
	}
	return string(b)
}

// brokerRelay forwards connections from its address to a broker: the
// broker as intake sees it, down until up is called and again once down
// is.
type brokerRelay struct {
	addr, to string

	wg    sync.WaitGroup
	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns []net.Conn
}

// up listens on the relay's address and forwards what connects to it.
func (r *brokerRelay) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	// The port was free a moment ago; another process may hold it briefly.
	eventually(t, 5*time.Second, "the relay listening on its port", func() bool {
		var err error
		ln, err = net.Listen("tcp", r.addr)
		return err == nil
	})
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	t.Cleanup(r.down)
	r.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.to)
			if err != nil {
				in.Close()
				continue
			}
			r.mu.Lock()
			if r.ln != ln { // went down meanwhile
				r.mu.Unlock()
				in.Close()
				out.Close()
				return
			}
			r.conns = append(r.conns, in, out)
			r.mu.Unlock()
			r.wg.Go(func() { io.Copy(out, in); out.Close() })
			r.wg.Go(func() { io.Copy(in, out); in.Close() })
		}
	})
}

// down stops listening and cuts every connection it forwards, as a broker
// that goes away does.
func (r *brokerRelay) down() {
	r.mu.Lock()
	if r.ln != nil {
		r.ln.Close()
	}
	r.ln = nil
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}

// downRelay is a relay to the broker at to, down: connections to its
// address are refused until up is called.
func downRelay(t *testing.T, to string) *brokerRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return &brokerRelay{addr: ln.Addr().String(), to: to}
}

// waitTripped waits for the consumer's breaker to open while its broker
// is down, and returns the consumer's last error.
func waitTripped(t *testing.T, s *server, id string, within time.Duration) string {
	t.Helper()
	var h struct {
		State     string `json:"state"`
		LastError string `json:"last_error"`
	}
	eventually(t, within, "the consumer's breaker tripped", func() bool {
		s.api(t, "GET", "/api/v1/consumers/"+id+"/health", nil, &h)
		return h.State == "tripped"
	})
	return h.LastError
}

// wantNothingDeliveredYet: while the broker is down, no event is dead or
// delivered, and every call made failed and will be retried.
func wantNothingDeliveredYet(t *testing.T, s *server) {
	t.Helper()
	for _, e := range s.events(t) {
		if e.State == "dead" || e.State == "delivered" {
			t.Fatalf("event %s is %s while its broker is down", e.ID, e.State)
		}
		for _, d := range s.event(t, e.ID).Deliveries {
			if d.Outcome != "retry" {
				t.Fatalf("event %s: delivery outcome %q while the broker is down", e.ID, d.Outcome)
			}
		}
	}
}

// waitEveryEventDelivered waits until every event is delivered, and fails
// at once if one is dead.
func waitEveryEventDelivered(t *testing.T, s *server, within time.Duration) {
	t.Helper()
	eventually(t, within, "every event delivered once the broker is back", func() bool {
		for _, e := range s.events(t) {
			if e.State == "dead" {
				t.Fatalf("event %s dead although its broker came back", e.ID)
			}
			if e.State != "delivered" {
				return false
			}
		}
		return true
	})
}

// wantEachEventOnce: the broker holds each event once, by the dedup ids
// counted in got, and nothing else (want messages in all).
func wantEachEventOnce(t *testing.T, s *server, got map[string]int, want int) {
	t.Helper()
	total := 0
	for _, k := range got {
		total += k
	}
	for _, e := range s.events(t) {
		if got[e.ID] != 1 {
			t.Errorf("event %s reached the broker %d times, want once", e.ID, got[e.ID])
		}
	}
	if total != want {
		t.Errorf("the broker holds %d messages, want %d", total, want)
	}
}

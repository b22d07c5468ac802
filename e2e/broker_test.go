package e2e

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Helpers of the tests of consumers whose url names a broker.

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

func postGitHubN(t *testing.T, s *server, path, prefix string, n int) {
	t.Helper()
	for i := range n {
		if status, b := postGitHub(t, http.DefaultClient, s.url+path, prefix+strconv.Itoa(i)); status != http.StatusOK && status != http.StatusAccepted {
			t.Fatalf("ingress answered %d %s", status, b)
		}
	}
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

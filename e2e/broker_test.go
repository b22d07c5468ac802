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
// broker as intake sees it, down until up is called.
type brokerRelay struct {
	addr, to string
	ln       net.Listener
	wg       sync.WaitGroup
}

func (r *brokerRelay) up(t *testing.T) {
	t.Helper()
	// The port was free a moment ago; another process may hold it briefly.
	eventually(t, 5*time.Second, "the relay listening on its port", func() bool {
		var err error
		r.ln, err = net.Listen("tcp", r.addr)
		return err == nil
	})
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		r.ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		r.wg.Wait()
	})
	r.wg.Go(func() {
		for {
			in, err := r.ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.to)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			r.wg.Go(func() { io.Copy(out, in); out.Close() })
			r.wg.Go(func() { io.Copy(in, out); in.Close() })
		}
	})
}

package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const githubSecret = "e2e-github-secret"

// setupGitHub creates an org, a GitHub connection and an endpoint, and
// returns the endpoint's ingress URL path.
func setupGitHub(t *testing.T, s *server) string {
	t.Helper()
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "github", "name": "gh",
		"secrets": []string{githubSecret}}, &conn)
	var ep struct{ Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
	return "/webhooks/" + ep.Token
}

func githubDelivery(url, id string) *http.Request {
	body := fmt.Appendf(nil, `{"action":"opened","delivery":%q,"repository":{"node_id":"R_1"}}`, id)
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

// TestKilledServerLosesNoAcknowledgedWebhook posts webhooks from several
// clients, kills the server with SIGKILL while requests are in flight,
// restarts it on the same data, and repeats. Every delivery that got a 2xx
// must be stored exactly once and processed into exactly one event.
func TestKilledServerLosesNoAcknowledgedWebhook(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the real binary")
	}
	data := t.TempDir()
	s := start(t, data)
	path := setupGitHub(t, s)

	var mu sync.Mutex
	acked := map[string]bool{}
	var seq atomic.Int64
	client := &http.Client{Timeout: 5 * time.Second}
	const rounds, clients, perRound = 3, 16, 150
	for round := range rounds {
		if round > 0 {
			s = start(t, data)
		}
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var roundAcks atomic.Int64
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					id := fmt.Sprintf("delivery-%d", seq.Add(1))
					resp, err := client.Do(githubDelivery(s.url+path, id).WithContext(ctx))
					if err != nil {
						continue // killed mid-request: not acknowledged
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						mu.Lock()
						acked[id] = true
						mu.Unlock()
						roundAcks.Add(1)
					}
				}
			}()
		}
		eventually(t, 60*time.Second, "acknowledgements this round", func() bool { return roundAcks.Load() >= perRound })
		s.kill() // while the clients are still posting
		stop()
		wg.Wait()
	}

	s = start(t, data)
	msgs := s.settledMessages(t)
	eventsOf := map[string]int{}
	for _, e := range s.events(t) {
		eventsOf[e.MessageID]++
	}
	stored := map[string]int{}
	for _, m := range msgs {
		if m.State != "processed" || eventsOf[m.ID] != 1 {
			t.Errorf("message %s (%s): %s/%s with %d events", m.ID, m.ProviderEventID, m.State, m.Outcome, eventsOf[m.ID])
		}
		stored[m.ProviderEventID]++
	}
	for id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
		}
	}
	t.Logf("%d acknowledged, %d stored (the rest were committed but killed before the answer) over %d kills",
		len(acked), len(msgs), rounds)
	if len(acked) < rounds*perRound {
		t.Fatalf("only %d acknowledged", len(acked))
	}
}

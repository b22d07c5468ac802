package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
)

// The helpers every broker destination's tests share.

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
	s.api(t, "GET", "/api/v1/consumers?limit=500", nil, &page)
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

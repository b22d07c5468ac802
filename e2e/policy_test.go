package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// try calls the admin API with the staff token and returns the status and
// body, whatever they are.
func (s *server) try(t *testing.T, method, path string, in any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+staffToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestConsumerDenyRefusesAURLWhenSavedAndTheCallsOfAConsumerSavedBefore
// restarts a server with --consumer-deny over its consumer's address: a
// new consumer there is refused 400, and the one saved before is never
// called, its delivery naming the policy.
func TestConsumerDenyRefusesAURLWhenSavedAndTheCallsOfAConsumerSavedBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	var calls atomic.Int32
	consumer := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer consumer.Close()
	data := t.TempDir()
	s := start(t, data)
	path := setupGitHub(t, s)
	org := firstOrgID(t, s)
	newConsumer := map[string]any{"org_id": org, "name": "issues", "app": "tracker", "url": consumer.URL + "/hooks",
		"event_types": []string{"github.issues.*"}}
	s.api(t, "POST", "/api/v1/consumers", newConsumer, nil)
	s.kill()

	s = start(t, data, "--consumer-deny", "127.0.0.0/8", "--consumer-deny", "::1/128")
	newConsumer["name"] = "again"
	if status, body := s.try(t, "POST", "/api/v1/consumers", newConsumer); status != http.StatusBadRequest ||
		!strings.Contains(body, "refused by the consumer address policy") {
		t.Fatalf("a consumer in a denied range: %d %s", status, body)
	}
	if status, _ := postGitHub(t, http.DefaultClient, s.url+path, "denied-1"); status != http.StatusOK {
		t.Fatalf("webhook: %d", status)
	}
	var detail struct {
		Deliveries []struct {
			Outcome string `json:"outcome"`
			Error   string `json:"error"`
		} `json:"deliveries"`
	}
	eventually(t, 20*time.Second, "the first call's record", func() bool {
		evs := s.events(t)
		if len(evs) == 0 {
			return false
		}
		s.api(t, "GET", "/api/v1/events/"+evs[0].ID, nil, &detail)
		return len(detail.Deliveries) > 0
	})
	if d := detail.Deliveries[0]; d.Outcome != "retry" || d.Error != "refused by the consumer address policy" || calls.Load() != 0 {
		t.Fatalf("delivery %+v, the consumer called %d times", d, calls.Load())
	}
}

// TestConsumerAllowFromTheEnvironmentAdmitsOnlyItsRangesNeverMetadata:
// INTAKE_CONSUMER_ALLOW limits consumers to its ranges, and the metadata
// address stays refused inside them.
func TestConsumerAllowFromTheEnvironmentAdmitsOnlyItsRangesNeverMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := launch(t, []string{"INTAKE_CONSUMER_ALLOW=10.1.0.0/16,169.254.0.0/16"}, t.TempDir())
	s.waitServing(t)
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	for url, want := range map[string]int{
		"http://10.1.2.3/hooks":         http.StatusCreated,
		"http://10.2.0.1/hooks":         http.StatusBadRequest,
		"http://127.0.0.1/hooks":        http.StatusBadRequest,
		"http://169.254.169.254/latest": http.StatusBadRequest,
	} {
		status, body := s.try(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org.ID, "name": "c", "app": "a",
			"url": url, "event_types": []string{"*"}})
		if status != want {
			t.Errorf("%s: %d %s, want %d", url, status, body, want)
		}
	}
}

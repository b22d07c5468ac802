package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
)

// TestATrippedConsumerIsNotifiedSignedToTheOrgsURL: on the real binary, an
// org sets its notifications from the CLI; a consumer whose calls all fail
// trips its breaker, and the org's URL receives one consumer.tripped
// notification signed under the secret the CLI showed.
func TestATrippedConsumerIsNotifiedSignedToTheOrgsURL(t *testing.T) {
	type note struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var notes []note
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes = append(notes, note{r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer receiver.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer down.Close()

	s := start(t, t.TempDir(), "--notify-interval", "100ms")
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	org := orgs.Items[0].ID
	var set struct {
		SigningSecret string `json:"signing_secret"`
		Topics        []string
	}
	if err := json.Unmarshal([]byte(s.cli(t, "notifications", "set", "--org", org, "--notify-url", receiver.URL,
		"--topic", "consumer.tripped")), &set); err != nil || set.SigningSecret == "" {
		t.Fatalf("notifications set: %v, %+v", err, set)
	}
	var c struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org, "name": "down", "app": "down", "url": down.URL,
		"event_types": []string{"github.*"}}, &c)
	s.api(t, "PATCH", "/api/v1/consumers/"+c.ID, map[string]any{"breaker_failures": 3}, nil)
	for i := range 5 {
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "tripping-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	eventually(t, 30*time.Second, "the org's URL receives a notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) > 0
	})
	mu.Lock()
	n := notes[0]
	mu.Unlock()
	var got struct {
		Type, Subject string
		OrgID         string `json:"org_id"`
		Count         int
	}
	if err := json.Unmarshal(n.body, &got); err != nil || got.Type != "consumer.tripped" || got.Subject != c.ID || got.OrgID != org || got.Count != 1 {
		t.Fatalf("notification %s (%v), want consumer.tripped about %s", n.body, err, c.ID)
	}
	ts, _ := strconv.ParseInt(n.header.Get("webhook-timestamp"), 10, 64)
	if want, _ := delivery.Sign(set.SigningSecret, n.header.Get("webhook-id"), ts, n.body); n.header.Get("webhook-signature") != want {
		t.Fatalf("signature %q does not verify under the secret shown", n.header.Get("webhook-signature"))
	}
}

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
)

// TestWebhookReachesConsumerAsASignedEvent follows one webhook through the
// real binary: posted to an endpoint, processed, routed and delivered to a
// consumer URL, with no step run by hand.
func TestWebhookReachesConsumerAsASignedEvent(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 4)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), b}
	}))
	defer consumer.Close()

	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var cons struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "issues", "app": "tracker",
		"url": consumer.URL + "/hooks", "event_types": []string{"github.issues.*"}}, &cons)

	resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "delivery-e2e-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("ingress answered %d", resp.StatusCode)
	}
	var g got
	select {
	case g = <-received:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the consumer never got the event")
	}
	var env struct {
		ID, Type, Provider string
		ProviderEventID    string `json:"provider_event_id"`
		Data               struct{ Delivery string }
	}
	if err := json.Unmarshal(g.body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != "github.issues.opened" || env.ProviderEventID != "delivery-e2e-1" || env.Data.Delivery != "delivery-e2e-1" {
		t.Fatalf("envelope %s", g.body)
	}
	ts := g.header.Get("webhook-timestamp")
	var unix int64
	if err := json.Unmarshal([]byte(ts), &unix); err != nil {
		t.Fatalf("webhook-timestamp %q", ts)
	}
	want, err := delivery.Sign(cons.SigningSecret, env.ID, unix, g.body)
	if err != nil || g.header.Get("webhook-signature") != want || g.header.Get("webhook-id") != env.ID {
		t.Fatalf("signature %q, want %q (%v)", g.header.Get("webhook-signature"), want, err)
	}
	var ev struct {
		State      string
		Deliveries []struct{ Outcome string } `json:"deliveries"`
	}
	eventually(t, 30*time.Second, "the event settles delivered", func() bool {
		s.api(t, "GET", "/api/v1/events/"+env.ID, nil, &ev)
		return ev.State == "delivered"
	})
	if len(ev.Deliveries) != 1 || ev.Deliveries[0].Outcome != "handled" {
		t.Fatalf("deliveries %+v", ev.Deliveries)
	}
}

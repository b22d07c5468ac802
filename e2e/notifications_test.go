package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
	if err := json.Unmarshal([]byte(s.cli(t, "notifications", "set", "--org", org, "--url", receiver.URL,
		"--topic", "consumer.tripped", "--json")), &set); err != nil || set.SigningSecret == "" {
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

// TestConsoleInBrowserSetsNotificationsAndShowsTheirSecretOnce: the
// notifications page, in Chromium: a first save shows the signing secret;
// the settings read back; a second save keeps the Slack URL it cannot show.
func TestConsoleInBrowserSetsNotificationsAndShowsTheirSecretOnce(t *testing.T) {
	s := start(t, t.TempDir())
	acme := setupStripeOrg(t, s, "acme")
	tab := browserTab(t)
	signIn(t, tab, s.url, acme.key, "header.top")
	step(t, tab, "open notifications and save",
		chromedp.Navigate(s.url+"/console/notifications"),
		chromedp.WaitVisible(chromedp.ID("notifications-form")),
		chromedp.SendKeys(chromedp.ID("notify-url"), "http://127.0.0.1:9/ops"),
		chromedp.SendKeys(chromedp.ID("slack-url"), "https://127.0.0.1/services/T0/B0/secret-part"),
		chromedp.Click(chromedp.CSS(`input[name="topic"][value="consumer.tripped"]`)),
		chromedp.Click(chromedp.ID("save-notifications")),
		chromedp.WaitVisible(chromedp.ID("signing-secret")),
	)
	if secret := read(t, tab, "secret", chromedp.Text(chromedp.ID("signing-secret"))); !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the first save shows %q", secret)
	}
	step(t, tab, "save again with a second topic",
		chromedp.Navigate(s.url+"/console/notifications"),
		chromedp.WaitVisible(chromedp.ID("notifications-form")),
		chromedp.Click(chromedp.CSS(`input[name="topic"][value="event.dead"]`)),
		chromedp.Click(chromedp.ID("save-notifications")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")),
	)
	if has := read(t, tab, "secret again", chromedp.Evaluate[bool](`document.getElementById("signing-secret") !== null`)); has {
		t.Fatal("a second save shows the secret again")
	}
	var got struct {
		URL             string   `json:"url"`
		SlackWebhookURL string   `json:"slack_webhook_url"`
		Topics          []string `json:"topics"`
	}
	s.api(t, "GET", "/api/v1/orgs/"+acme.id+"/notifications", nil, &got)
	slices.Sort(got.Topics)
	if got.URL != "http://127.0.0.1:9/ops" || got.SlackWebhookURL == "" || strings.Contains(got.SlackWebhookURL, "secret-part") ||
		strings.Join(got.Topics, ",") != "consumer.tripped,event.dead" {
		t.Fatalf("settings after two saves: %+v", got)
	}
}

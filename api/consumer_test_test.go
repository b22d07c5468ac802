package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/delivery"
)

// A test delivery reaches the consumer signed under its secret, as type
// intake.test, and the answer says what the consumer said.
func TestAConsumerTestDeliversASignedTestEventAndSaysWhatTheConsumerAnswered(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	var got *http.Request
	var body []byte
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
	}))
	defer app.Close()
	e := newEnv(t)
	acme := e.newTenant("acme")
	req := newConsumer("app", "stripe.*")
	req.URL = app.URL + "/hooks"
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, req)

	res := must[api.ConsumerTest](e, 200, "POST", "/api/v1/consumers/"+c.ID+"/test", acme.org.APIKey, nil)
	if res.Outcome != intake.DeliveryHandled || res.StatusCode != 200 || res.EventID == "" || res.Error != "" {
		t.Fatalf("test answered %+v, want handled 200", res)
	}
	mu.Lock()
	var env intake.Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Type != "intake.test" || env.ID != res.EventID || got.Header.Get("webhook-id") != res.EventID {
		t.Fatalf("the consumer got %s (%v), headers %v", body, err, got.Header)
	}
	want, _ := delivery.Sign(c.SigningSecret, res.EventID, mustAtoi(t, got.Header.Get("webhook-timestamp")), body)
	if got.Header.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q under the consumer's secret", got.Header.Get("webhook-signature"), want)
	}
	status = http.StatusInternalServerError
	mu.Unlock()
	res = must[api.ConsumerTest](e, 200, "POST", "/api/v1/consumers/"+c.ID+"/test", acme.org.APIKey, nil)
	if res.Outcome != intake.DeliveryRetry || res.StatusCode != 500 || !strings.Contains(res.Error, "500") {
		t.Fatalf("test of a failing consumer answered %+v", res)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	if len(audit.Items) == 0 || audit.Items[0].Action != "consumer.test" || !strings.Contains(audit.Items[0].Detail, "outcome=retry status=500") {
		t.Fatalf("audit %+v", audit.Items)
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A broker url's password is sealed: every read shows it as ***, the
// database never holds it in the clear, the export names an env variable
// for the url, and giving the url back as read changes nothing.
func TestABrokerURLsPasswordIsSealedAndShownAsStars(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	req := newConsumer("orders", "stripe.*")
	req.URL = "nats://alice:pw-Zq81x@127.0.0.1:4222/orders.{type}?stream=ORDERS"
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, req)
	shown := "nats://***:***@127.0.0.1:4222/orders.{type}?stream=ORDERS"
	if c.URL != shown {
		t.Fatalf("created url %q, want %q", c.URL, shown)
	}
	for _, path := range []string{"/api/v1/consumers/" + c.ID, "/api/v1/consumers", "/api/v1/audit", "/api/v1/export"} {
		body := e.do("GET", path, acme.org.APIKey, nil).Body.String()
		if strings.Contains(body, "pw-Zq81x") {
			t.Errorf("GET %s shows the password: %s", path, body)
		}
	}
	if strings.Contains(string(e.dbBytes()), "pw-Zq81x") {
		t.Fatal("the database holds the broker's password in the clear")
	}
	if exp := e.do("GET", "/api/v1/export", acme.org.APIKey, nil).Body.String(); !strings.Contains(exp, "${env:ACME_ORDERS_URL}") {
		t.Fatalf("the export does not name an env variable for the url:\n%s", exp)
	}
	// The url as read, or in full, is the same url: no change.
	for _, same := range []string{shown, req.URL} {
		got := must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, map[string]string{"url": same})
		if got.URL != shown {
			t.Fatalf("after PATCH url=%s: %q", same, got.URL)
		}
	}
	stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil || len(stored.SealedURL) == 0 {
		t.Fatalf("stored %+v %v, want the url sealed", stored, err)
	}
	// A url without credentials is kept as it is, and unsealed.
	got := must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, map[string]string{"url": "nats://127.0.0.1:4222/orders"})
	if stored, _ := e.store.Consumer(context.Background(), intake.Scope{}, c.ID); got.URL != "nats://127.0.0.1:4222/orders" || len(stored.SealedURL) != 0 {
		t.Fatalf("a plain url: %q, sealed %d bytes", got.URL, len(stored.SealedURL))
	}
}

// Every credential a consumer url carries is sealed, not only a password:
// a NATS token, a Redis user, a query parameter named like a secret. Each
// read shows it as ***, and the url delivered to is the one given.
func TestEveryCredentialInAConsumerURLIsSealedAndShownAsStars(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	for i, tc := range []struct{ raw, shown, secret string }{
		{"nats://tok-N4x7q@127.0.0.1:4222/orders", "nats://***@127.0.0.1:4222/orders", "tok-N4x7q"},
		{"redis://user-R2d9:pw-R2d9@127.0.0.1:6379/0?stream=s", "redis://***:***@127.0.0.1:6379/0?stream=s", "user-R2d9"},
		{"https://127.0.0.1/hooks?api_key=key-Q8m3&v=1", "https://127.0.0.1/hooks?api_key=***&v=1", "key-Q8m3"},
		{"https://127.0.0.1/hooks?access_token=at-W5k2", "https://127.0.0.1/hooks?access_token=***", "at-W5k2"},
	} {
		req := newConsumer(fmt.Sprintf("c%d", i), "stripe.*")
		req.URL = tc.raw
		c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, req)
		if c.URL != tc.shown {
			t.Errorf("created url %q, want %q", c.URL, tc.shown)
		}
		for _, path := range []string{"/api/v1/consumers/" + c.ID, "/api/v1/consumers", "/api/v1/audit", "/api/v1/export"} {
			if body := e.do("GET", path, acme.org.APIKey, nil).Body.String(); strings.Contains(body, tc.secret) {
				t.Errorf("GET %s shows %s", path, tc.secret)
			}
		}
		stored, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if dest, err := e.sealer.ConsumerURL(stored); err != nil || dest != tc.raw {
			t.Errorf("delivered to %q (%v), want %q", dest, err, tc.raw)
		}
	}
	if db := string(e.dbBytes()); strings.Contains(db, "tok-N4x7q") || strings.Contains(db, "key-Q8m3") {
		t.Fatal("the database holds a credential in the clear")
	}
}

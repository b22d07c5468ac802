package delivery

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The Standard Webhooks specification's test vector, used by its reference
// libraries (standard-webhooks/standard-webhooks, libraries/*/ tests).
func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	if _, err := Sign("not base64!", "id", 1, nil); err == nil {
		t.Fatal("signed with a malformed secret")
	}
}

func TestNewSecretIsAUsableStandardWebhooksSecret(t *testing.T) {
	s := NewSecret()
	if !strings.HasPrefix(s, "whsec_") || s == NewSecret() {
		t.Fatalf("secret %q", s)
	}
	if key, err := secretKey(s); err != nil || len(key) != 32 {
		t.Fatalf("key %d bytes, %v", len(key), err)
	}
}

func TestPolicyRefusesMetadataAddressesAtRegistrationAndAtConnect(t *testing.T) {
	p := DefaultPolicy()
	ctx := context.Background()
	for _, u := range []string{"http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/", "ftp://example.com/", "/relative", "http://user:pw@127.0.0.1/"} {
		if err := p.CheckURL(ctx, u, nil); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:3000/hooks", "http://10.1.2.3/x", "https://localhost/hooks"} {
		if err := p.CheckURL(ctx, u, nil); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	// At connect time: the dialer refuses, whatever the URL said before.
	s := NewSender(Options{Policy: p, Timeout: 2 * time.Second})
	r := send(ctx, s, "http://169.254.169.254/", NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	if r.Outcome != intake.DeliveryRetry || r.Err != "refused by the consumer address policy" {
		t.Fatalf("result %+v", r)
	}
}

func TestSendClassifiesAnswersAndReadsAtMost64KiB(t *testing.T) {
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) }))
	defer srv.Close()
	s := NewSender(Options{Policy: DefaultPolicy(), MaxRetryAfter: time.Hour})
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	send := func() Result {
		return send(context.Background(), s, srv.URL, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), now)
	}
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter)
		outcome string
		wait    time.Duration
	}{
		{"204 handled", func(w http.ResponseWriter) { w.WriteHeader(204) }, intake.DeliveryHandled, 0},
		{"200 ignored", func(w http.ResponseWriter) { io.WriteString(w, `{"outcome":"ignored"}`) }, intake.DeliveryIgnored, 0},
		{"200 other json", func(w http.ResponseWriter) { io.WriteString(w, `{"outcome":"done"}`) }, intake.DeliveryHandled, 0},
		{"302 not followed", func(w http.ResponseWriter) { w.Header().Set("Location", "/elsewhere"); w.WriteHeader(302) }, intake.DeliveryRetry, 0},
		{"500", func(w http.ResponseWriter) { w.WriteHeader(500) }, intake.DeliveryRetry, 0},
		{"429 seconds", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "30"); w.WriteHeader(429) }, intake.DeliveryRetry, 30 * time.Second},
		{"503 date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", now.Add(2*time.Minute).Format(http.TimeFormat))
			w.WriteHeader(503)
		}, intake.DeliveryRetry, 2 * time.Minute},
		{"503 capped", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "999999"); w.WriteHeader(503) }, intake.DeliveryRetry, time.Hour},
		{"huge 200", func(w http.ResponseWriter) { io.WriteString(w, strings.Repeat("x", 10<<20)) }, intake.DeliveryHandled, 0},
	}
	for _, c := range cases {
		answer = c.answer
		r := send()
		if r.Outcome != c.outcome || r.RetryAfter != c.wait {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

// send posts env to url signed with secret, as the router posts an
// envelope no transform changed.
func send(ctx context.Context, s *Sender, url, secret string, env intake.Envelope, now time.Time) Result {
	body, err := json.Marshal(env)
	if err != nil {
		panic(err)
	}
	return s.SendBody(ctx, url, []string{secret}, env.ID, body, nil, now)
}

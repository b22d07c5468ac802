package provider

import (
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"
)

// received is when test requests arrive; signing times are set relative to it.
var received = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func adapter(t testing.TB, name string) Adapter {
	t.Helper()
	a, ok := Lookup(name)
	if !ok {
		t.Fatalf("adapter %q not registered", name)
	}
	return a
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func hexMAC(h func() hash.Hash, key string, parts ...string) string {
	m := hmac.New(h, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func sha256Hex(key string, parts ...string) string { return hexMAC(sha256.New, key, parts...) }

func b64MAC(h func() hash.Hash, key string, parts ...string) string {
	m := hmac.New(h, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// post is a request received at the test time.
func post(body string, kv ...string) *Request {
	return &Request{Method: "POST", URL: fuzzURL, Header: headers(kv...), Body: []byte(body), ReceivedAt: received}
}

// rejectCase is one request a Verify must refuse.
type rejectCase struct {
	name    string
	r       *Request
	secrets [][]byte
}

// wantAllRejected runs the cases against adapter name with cfg.
func wantAllRejected(t *testing.T, name string, cfg Config, cases []rejectCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, name).Verify(c.r, c.secrets, cfg))
		})
	}
}

func secrets(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, v := range s {
		out[i] = []byte(v)
	}
	return out
}

// wantVerified fails unless err is nil.
func wantVerified(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Verify: %v, want nil", err)
	}
}

// wantRejected fails unless err is a signature failure.
func wantRejected(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrSignature) {
		t.Fatalf("Verify: %v, want ErrSignature", err)
	}
}

// wantPermanent fails unless err marks a request that will never interpret.
func wantPermanent(t *testing.T, err error) {
	t.Helper()
	var p *PermanentError
	if !errors.As(err, &p) {
		t.Fatalf("err = %v, want a PermanentError", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// oneEvent interprets r and returns its single event, checking that the
// message-level fields mirror it.
func oneEvent(t *testing.T, a Adapter, r *Request, cfg Config) EventSpec {
	t.Helper()
	in, err := a.Interpret(r, cfg)
	if err != nil {
		t.Fatalf("Interpret: %v", err)
	}
	if len(in.Events) != 1 {
		t.Fatalf("Interpret: %d events, want 1", len(in.Events))
	}
	ev := in.Events[0]
	if in.ProviderEventID != ev.ProviderEventID || in.EventType != ev.Type || in.Kind != ev.Kind {
		t.Fatalf("message fields %q %q %q differ from the event's %q %q %q",
			in.ProviderEventID, in.EventType, in.Kind, ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if in.Challenge {
		t.Fatal("Interpret: Challenge set on an ordinary event")
	}
	return ev
}

func TestRegistryHoldsEveryAdapter(t *testing.T) {
	want := []string{
		"adyen", "asana", "bigcommerce", "bitbucket", "box", "buildkite", "calcom", "calendly", "chargebee", "checkout", "circleci", "clerk", "clickup", "coinbase_commerce",
		"customerio", "discord", "docusign", "dropbox", "flutterwave", "gitea", "github", "gitlab", "gocardless", "google", "heroku", "hmac",
		"hubspot", "instagram", "intercom", "jira", "launchdarkly", "lemonsqueezy", "linear", "mailgun", "mandrill", "meta", "mollie",
		"msgraph", "netlify", "none", "notion", "okta", "openai", "paddle", "pagerduty", "paystack", "postmark", "quickbooks",
		"razorpay", "recurly", "resend", "sendgrid", "sentry", "shopify", "slack", "square", "standard", "stripe", "svix",
		"trello", "twilio", "twitch", "typeform", "vercel", "whatsapp", "woocommerce", "workos", "xero", "zendesk", "zoom",
		// Issue 43, batch B.
		"line", "telegram", "helpscout", "segment", "onfido", "mux", "persona", "elevenlabs", "patreon", "webflow", "monday", "airtable",
		// Issue 43, batch C.
		"aws_sns", "azure_eventgrid", "twitter", "google_pubsub",
	}
	sort.Strings(want)
	if !equalStrings(Names(), want) {
		t.Errorf("Names() = %v\nwant      %v", Names(), want)
	}
	for _, n := range want {
		a := adapter(t, n)
		if a.Name() != n {
			t.Errorf("adapter %q names itself %q", n, a.Name())
		}
		if err := a.ValidateConfig(Config{}); err != nil && !needsConfig[n] {
			t.Errorf("%s: empty config rejected: %v", n, err)
		}
		if err := a.ValidateConfig(Config{"tolerance": "soon"}); err == nil && acceptsTolerance[n] {
			t.Errorf("%s: a malformed tolerance was accepted", n)
		}
	}
}

// needsConfig lists the adapters a connection cannot use without settings.
var needsConfig = map[string]bool{"hmac": true, "google_pubsub": true}

// acceptsTolerance lists the adapters whose providers sign a time.
var acceptsTolerance = map[string]bool{
	"aws_sns":    true,
	"box":        true,
	"buildkite":  true,
	"calendly":   true,
	"clerk":      true,
	"customerio": true,
	"discord":    true,
	"elevenlabs": true,
	"gitlab":     true,
	"hubspot":    true,
	"linear":     true,
	"mux":        true,
	"mailgun":    true,
	"openai":     true,
	"paddle":     true,
	"recurly":    true,
	"persona":    true,
	"resend":     true,
	"sendgrid":   true,
	"slack":      true,
	"standard":   true,
	"stripe":     true,
	"svix":       true,
	"twitch":     true,
	"webflow":    true,
	"workos":     true,
	"zendesk":    true,
	"zoom":       true,
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func sha256Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func ecdsaP256() elliptic.Curve { return elliptic.P256() }

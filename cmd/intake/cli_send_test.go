package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/provider/fixtures"
)

// captured is a request as an endpoint received it.
type captured struct {
	method string
	header http.Header
	body   []byte
}

// captureEndpoint stands in for an endpoint, keeping what was posted.
func captureEndpoint(t *testing.T, status int) (*httptest.Server, <-chan captured) {
	t.Helper()
	got := make(chan captured, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- captured{r.Method, r.Header.Clone(), b}
		w.WriteHeader(status)
		io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func sendSecret(name string) string {
	switch name {
	case "standard", "svix", "clerk", "resend", "openai":
		return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	case "postmark", "chargebee":
		return "hooks:correct-horse"
	case "adyen":
		return "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	case "airtable":
		return "dGhlLWNvbm5lY3Rpb24tc2VjcmV0"
	case "discord": // a test key pair's Ed25519 seed; the connection holds its public key
		return "3f1e9a2b8c7d6e5f40312a1b0c9d8e7f6a5b4c3d2e1f00112233445566778899"
	case "sendgrid": // a test key pair's P-256 private key; the connection holds its public key
		return "MHcCAQEEIEsLRELMAz9mGeFHcQ1/0I2Sjv/JJHcQVN1ter+mTvpQoAoGCCqGSM49AwEHoUQDQgAE20MAyh7MA/McVbvTJfeEWV1Z5siBXh69361tckip9p9PDFE7wGF9YBO8p9QCQhA+1MiQdexrwO4CykK/OTDeLQ=="
	}
	return "the-connection-secret"
}

func TestSendPostsAWebhookTheProvidersAdapterVerifies(t *testing.T) {
	s := newServer(t)
	for _, name := range fixtures.Providers() {
		t.Run(name, func(t *testing.T) {
			ep, got := captureEndpoint(t, 200)
			url := ep.URL + "/webhooks/ik_sample"
			out := s.mustRun(t, "", "send", "--endpoint-url", url, "--provider", name, "--secret", sendSecret(name))
			want := name + "." + fixtures.DefaultType(name)
			if !strings.Contains(out, "sent "+want) || !strings.Contains(out, "200 OK") {
				t.Fatalf("output %q", out)
			}
			r := <-got
			a, _ := provider.Lookup(name)
			req := &provider.Request{Method: r.method, URL: url, Header: r.header, Body: r.body, ReceivedAt: time.Now()}
			key, err := fixtures.ConnectionSecret(name, sendSecret(name))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Verify(req, [][]byte{[]byte(key)}, provider.Config{}); err != nil {
				t.Fatalf("the %s adapter refuses what send posted: %v", name, err)
			}
			in, err := a.Interpret(req, provider.Config{})
			if err != nil || len(in.Events) != 1 || in.Events[0].Type != want {
				t.Fatalf("interpreted as %+v (%v), want one %s event", in, err, want)
			}
		})
	}
}

func TestSendTakesTheTypeAndPrintsJSON(t *testing.T) {
	s := newServer(t)
	ep, got := captureEndpoint(t, 202)
	url := ep.URL + "/webhooks/ik_sample"
	out := s.mustRun(t, "", "send", "--endpoint-url", url, "--provider", "github", "--type", "github.issues.closed",
		"--secret", "gh-secret", "--json")
	res := decodeOut[sendResult](t, out)
	if res.Type != "github.issues.closed" || res.Status != 202 || res.Answer != `{"received":true}` {
		t.Fatalf("result %+v", res)
	}
	r := <-got
	if r.header.Get("X-GitHub-Event") != "issues" {
		t.Fatalf("X-GitHub-Event %q", r.header.Get("X-GitHub-Event"))
	}
	var body struct{ Action string }
	if json.Unmarshal(r.body, &body); body.Action != "closed" {
		t.Fatalf("action %q", body.Action)
	}
}

func TestSendFailsOnARefusingEndpointAndExplainsWhy(t *testing.T) {
	s := newServer(t)
	ep, _ := captureEndpoint(t, 404)
	_, err := s.run(t, "", "send", "--endpoint-url", ep.URL+"/webhooks/nope", "--provider", "stripe", "--secret", "x")
	if err == nil || !strings.Contains(err.Error(), "no enabled endpoint has this URL") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.run(t, "", "send", "--endpoint-url", ep.URL, "--provider", "stripe"); err == nil || !strings.Contains(err.Error(), "--secret") {
		t.Fatalf("without a secret: %v", err)
	}
	if _, err := s.run(t, "", "send", "--endpoint-url", ep.URL, "--provider", "nosuch", "--secret", "x"); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Fatalf("unknown provider: %v", err)
	}
	if _, err := s.run(t, "", "send", "--provider", "stripe", "--secret", "x"); err == nil || !strings.Contains(err.Error(), "--endpoint-url") {
		t.Fatalf("without an endpoint: %v", err)
	}
	// As README writes it: the list needs no endpoint.
	out := s.mustRun(t, "", "send", "--provider", "list")
	if rows := table(t, out); len(rows) != len(fixtures.Providers())+1 {
		t.Fatalf("provider list:\n%s", out)
	}
	list := decodeOut[api.List[struct{ Provider, DefaultType string }]](t, s.mustRunJSON(t, "", "send", "--endpoint-url", ep.URL, "--provider", "list", "--json"))
	if len(list.Items) != len(fixtures.Providers()) || list.Items[0].Provider == "" {
		t.Fatalf("provider list as JSON: %+v", list)
	}
}

// TestSendWithoutATokenSaysTheSignatureIsStillToBeVerified: a 200 only
// means stored; without a token to follow the message, send says so and
// names the command that shows the outcome.
func TestSendWithoutATokenSaysTheSignatureIsStillToBeVerified(t *testing.T) {
	s := newServer(t)
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(ep.Close)
	out := s.mustRun(t, "", "send", "--endpoint-url", ep.URL+"/webhooks/ik_sample", "--provider", "github", "--secret", "x")
	for _, want := range []string{"200 OK", "stored; intake verifies its signature in the background", "with a token", "intake messages list"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	res := decodeOut[sendResult](t, s.mustRunJSON(t, "", "send", "--endpoint-url", ep.URL+"/webhooks/ik_sample", "--provider", "github", "--secret", "x", "--json"))
	if res.Status != 200 || res.MessageID != "" || res.State != "" {
		t.Fatalf("--json result %+v", res)
	}
}

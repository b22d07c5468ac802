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
	case "aws_sns", "google_pubsub":
		return sendSNSKey
	case "discord": // a test key pair's Ed25519 seed; the connection holds its public key
		return "3f1e9a2b8c7d6e5f40312a1b0c9d8e7f6a5b4c3d2e1f00112233445566778899"
	case "sendgrid": // a test key pair's P-256 private key; the connection holds its public key
		return "MHcCAQEEIEsLRELMAz9mGeFHcQ1/0I2Sjv/JJHcQVN1ter+mTvpQoAoGCCqGSM49AwEHoUQDQgAE20MAyh7MA/McVbvTJfeEWV1Z5siBXh69361tckip9p9PDFE7wGF9YBO8p9QCQhA+1MiQdexrwO4CykK/OTDeLQ=="
	}
	return "the-connection-secret"
}

// sendConfig is the config of a connection that takes samples: SNS's pins
// the certificate of the key the samples are signed with, as Pub/Sub's does.
func sendConfig(name string) provider.Config {
	switch name {
	case "aws_sns":
		return provider.Config{"certificate": sendSNSCertificate}
	case "google_pubsub":
		return provider.Config{"service_account": "intake-sample@intake-sample.iam.gserviceaccount.com", "public_keys": sendSNSCertificate}
	}
	return provider.Config{}
}

// An SNS sample's key and the self-signed certificate a connection pins.
const (
	sendSNSKey = `-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDh/IXEZY8JBcII
olB3MxPV+nTGB7o2ZXzHiyW956x1V0XMRMXYHkyLS1pdgo69HBxeCVpLqe4qkDNf
XktdeJ8bKAXaHS1umPnUPy6obBVzsod/7meyB0uFgzffNgaofCbVat8PwxmaoE1d
bz/KTjRayHnH+3qyOanU6zWbGMHJtY0OiG64XQ3MzvHnPCuOEUf9dhRJ/rcSggTf
0ei63YhPjuHInvDgpMnjdo317Ze/zlhMJAUZS+WVR5dr9rwal1cSGybyDkhcqR42
2ovCA5qE6e4gn85j8qgYm8DMPhF38vvJsTR9XvleLAJZcxPpHOdClv7Qz1MIf6Q1
HmCw8havAgMBAAECggEABg2K+BXe03mKTpApnC6pnh3YEdxWQjQh4rOQldxGM/So
oYFiutABemIMq/FiPn6pwh2TA9+anz7DdTnoG5kMU0KENM9puTW7qfyocpIS0OMT
gQg1QSeRu7UuviixdW1+IoTqDbrs84nfK8/vC7P58AOesdJUx8BK6GSwR+orJDdG
V0wJqVaT/EKOEpvzbnbCy9xFuRL8LSwnuJCajV+lZdg4c3UnPK+dz+hFVCmw1ZI4
pohXKUg4iujvZHD74OSSRENM9mQTdzQ9kL7kwS+7ELtvoVZC/b2ZvszuDZBNehLf
sZYIVs+51I8POrPvzAemEx86ttFtw+n39BJo8QGwVQKBgQDsJ7w3zq+g7MiLLNno
b9gNyQ2kj9kHZARCx6ghUOn7aNnuEFD8BqyyO7I36jqNo74QBgyh1C5cSjcW3Yn0
pKFdTA01xPgjaRdtYncFMX8L8lmtAa09P5rX/De/tdu0oNEmZwhBPQXja05uZF2j
OHcBT6R2xzP3Wz9OixR4YbjW6wKBgQD0+gg0NCbBLcP/Csk33K4S91hX2Lp2mgy/
uBsDQ7F9Xun5hIz5WiTDU/w3VkEHO4DNop4SDJsG1hI7gpdWNzp7XtWyvnAnB7Vg
g3gPRYUjOKsfkUCF83HQKMuemojyE1EyaDKvpNmzEA3d5ygBZVXSkQVoSBUqMn+9
gArlr9PWTQKBgQCA7eCwh0MTlLKYaVA+unE2dYHhSjeu9UfuPZrpNYfJHqF8e6P7
NJmsZTMTm+mD0tW9YdAbuf/lmw8giKr8ybTfftnndTYT/xgvPAbG6xL1rsaO0c+H
FOaw7J5zKBJfNz14vd+f3nUMiFU1p84HgphWOukLgA47CbIya3QtlQyZKQKBgQDm
PsnPJuT106nO37hXRJZnRQpHJm+6YPdyifr5inobN0X5Ole1VMAQxbLb37mmropU
u26N0EM0nabtP8Q1SBszMOLw6IRIarpSR75jvBdyDyTmuoJGY5So7G7UVrI3s2gx
VDWvV+U0ovYlhcjX5wJOsfa/GGCsFGJzHREg56zWUQKBgQCSEi49S5glbQ1qNoQT
WJSCeSVhaOz/XQIaYrYeJGq/IloMnBcE938ICQjQGMxu6k2bTCYat/VcJODLugCb
Bxk5cwVd+W2FuAOnufOHe+t5DhsYMEWxhmOwCYPiiP2+mC6iQCu/zso9FBtlSAfm
LDDmSz72reEuAZMyT/tJrgJHQg==
-----END PRIVATE KEY-----
`
	sendSNSCertificate = `-----BEGIN CERTIFICATE-----
MIIC1TCCAb2gAwIBAgIBLDANBgkqhkiG9w0BAQsFADAjMSEwHwYDVQQDExhpbnRh
a2Ugc2FtcGxlIFNOUyBzaWduZXIwIBcNMjUwMTAxMDAwMDAwWhgPMjEyNTAxMDEw
MDAwMDBaMCMxITAfBgNVBAMTGGludGFrZSBzYW1wbGUgU05TIHNpZ25lcjCCASIw
DQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAOH8hcRljwkFwgiiUHczE9X6dMYH
ujZlfMeLJb3nrHVXRcxExdgeTItLWl2Cjr0cHF4JWkup7iqQM19eS114nxsoBdod
LW6Y+dQ/LqhsFXOyh3/uZ7IHS4WDN982Bqh8JtVq3w/DGZqgTV1vP8pONFrIecf7
erI5qdTrNZsYwcm1jQ6IbrhdDczO8ec8K44RR/12FEn+txKCBN/R6LrdiE+O4cie
8OCkyeN2jfXtl7/OWEwkBRlL5ZVHl2v2vBqXVxIbJvIOSFypHjbai8IDmoTp7iCf
zmPyqBibwMw+EXfy+8mxNH1e+V4sAllzE+kc50KW/tDPUwh/pDUeYLDyFq8CAwEA
AaMSMBAwDgYDVR0PAQH/BAQDAgeAMA0GCSqGSIb3DQEBCwUAA4IBAQAd3/YNGkgc
a8ZWDsDZk36Nv05PdeL9ZJ+afFH0Z4jatERxE6Gt7rsbwP72K0GnOCQ4G7j6HFQa
NT1lBtB9ykGcZFBU6ahB0SKl/eIEQdW9KlMKxeUam6FcTkl+EH3hkF8VuaoEvWKb
ce+dak060RTjo5nHBoTcNbRR5/WwXEL4hU/Ifl/HdauouJqaF+DQZe7mONmQJrHE
b2f8jL04DnwS6ff1pBOZhGz9fJM3JLRGnig8fwQ10f8QxbDMCJJIRxTt02e8n0f2
o/EaHMmFrlmfYdFhIKi2s8xk3T3tVqHTTl95Kvr9m5GUU7Q/ogGV5Zq3x7ky1SLb
brJUUtn2/ZtC
-----END CERTIFICATE-----
`
)

func TestSendPostsAWebhookTheProvidersAdapterVerifies(t *testing.T) {
	s := newServer(t)
	for _, name := range fixtures.Providers() {
		t.Run(name, func(t *testing.T) {
			ep, got := captureEndpoint(t, 200)
			url := ep.URL + "/webhooks/ik_sample"
			out := s.mustRun(t, "", "send", "--endpoint-url", url, "--provider", name, "--secret="+sendSecret(name))
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
			if err := a.Verify(req, [][]byte{[]byte(key)}, sendConfig(name)); err != nil {
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

package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intakehq/intake/provider/fixtures"
)

// TestLogsCarryNoSecretBodyOrSignature runs the real binary at debug level,
// in both log formats, through forged signatures, handshakes (Slack, Meta,
// Asana's X-Hook-Secret), Basic-auth credentials, a body that cannot be
// interpreted and bodies carrying a marker, then reads everything it
// logged: not one secret, token, credential, signature, challenge or
// marker may appear.
func TestLogsCarryNoSecretBodyOrSignature(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			s := start(t, t.TempDir(), "--log-format", format, "--log-level", "debug")
			secrets := exerciseSecrets(t, s)
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.done:
			case <-time.After(60 * time.Second): // a hang guard
				t.Fatal("intake did not stop on SIGTERM")
			}
			logs := s.logs.String()
			if !strings.Contains(logs, "intake serving") || !strings.Contains(logs, "stopped") {
				t.Fatalf("the captured logs miss the start or the stop: %s", logs)
			}
			if first, _, _ := strings.Cut(logs, "\n"); (format == "json") != strings.HasPrefix(first, "{") {
				t.Fatalf("--log-format %s logged %q", format, first)
			}
			for what, v := range secrets {
				if strings.Contains(logs, v) {
					t.Errorf("the logs carry %s (%q)", what, v)
				}
			}
			if t.Failed() {
				t.Logf("logs:\n%s", logs)
			}
		})
	}
}

// marker is a value no log line would hold by chance.
func marker(what string) string { return what + strings.ToUpper(rand.Text()[:16]) }

func hexMAC(secret string, parts ...[]byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// exerciseSecrets sets up connections of several providers and sends them
// good, forged and handshake requests; it returns every value that must
// never be logged, by what it is, once every stored message has settled.
func exerciseSecrets(t *testing.T, s *server) map[string]string {
	t.Helper()
	never := map[string]string{"the staff token": staffToken}
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	t.Cleanup(consumer.Close)

	var org struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	never["the org's API key"] = org.APIKey
	var cons struct {
		SigningSecret string `json:"signing_secret"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": org.ID, "name": "all", "app": "all", "url": consumer.URL,
		"event_types": []string{"*"}}, &cons)
	never["the consumer's signing secret"] = cons.SigningSecret
	endpoint := func(provider string, secrets []string, config map[string]any) (connID, url string) {
		t.Helper()
		var conn struct{ ID string }
		s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": provider, "name": provider,
			"secrets": secrets, "config": config}, &conn)
		var ep struct{ Token string }
		s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
		never["the "+provider+" endpoint token"] = ep.Token
		for i, sec := range secrets {
			never[fmt.Sprintf("%s secret %d", provider, i)] = sec
		}
		return conn.ID, s.url + "/webhooks/" + ep.Token
	}
	accepted := 0
	send := func(what string, want int, method, url string, header http.Header, body []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: ingress answered %d, want %d", what, resp.StatusCode, want)
		}
		accepted++ // every request to a known endpoint is stored, refused or not
	}
	mark := func(what string) string { v := marker("M"); never[what] = v; return v }

	// GitHub: a good delivery, a forged one, and a signed body that does
	// not interpret; each body carries a marker.
	_, gh := endpoint("github", []string{marker("ghsecret")}, nil)
	ghSecret := never["github secret 0"]
	ghHeader := func(sig string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"issues"},
			"X-Github-Delivery": {"d-" + rand.Text()[:8]}, "X-Hub-Signature-256": {"sha256=" + sig}}
	}
	good := fmt.Appendf(nil, `{"action":"opened","issue":{"title":%q},"repository":{"node_id":"R_1"}}`, mark("a good GitHub body's marker"))
	send("github good", 200, "POST", gh, ghHeader(hexMAC(ghSecret, good)), good)
	forged := fmt.Appendf(nil, `{"action":"opened","issue":{"title":%q},"repository":{"node_id":"R_1"}}`, mark("a forged GitHub body's marker"))
	forgedSig := hexMAC(marker("notthesecret"), forged)
	never["a forged GitHub signature"] = forgedSig
	send("github forged", 200, "POST", gh, ghHeader(forgedSig), forged)
	broken := []byte("not json " + mark("an uninterpretable body's marker"))
	send("github uninterpretable", 200, "POST", gh, ghHeader(hexMAC(ghSecret, broken)), broken)

	// Stripe: a sample signed with the wrong secret.
	_, st := endpoint("stripe", []string{"whsec_" + marker("stripe")}, nil)
	sample, err := fixtures.Build("stripe", fixtures.Options{Secret: "whsec_" + marker("wrong"), URL: st})
	if err != nil {
		t.Fatal(err)
	}
	_, v1, _ := strings.Cut(sample.Header.Get("Stripe-Signature"), "v1=")
	never["a forged Stripe signature"] = v1
	send("stripe forged", 200, "POST", st, sample.Header, sample.Body)

	// Slack: the url_verification handshake, signed and forged.
	slackSecret := marker("slack")
	_, sl := endpoint("slack", []string{slackSecret}, nil)
	slackHeader := func(secret string, body []byte) http.Header {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sig := "v0=" + hexMAC(secret, []byte("v0:"+ts+":"), body)
		never["a Slack signature "+sig[:12]] = sig
		return http.Header{"Content-Type": {"application/json"}, "X-Slack-Request-Timestamp": {ts}, "X-Slack-Signature": {sig}}
	}
	hs := fmt.Appendf(nil, `{"type":"url_verification","token":%q,"challenge":%q}`, mark("a Slack verification token"), mark("a Slack challenge"))
	send("slack handshake", 200, "POST", sl, slackHeader(slackSecret, hs), hs)
	hs = fmt.Appendf(nil, `{"type":"url_verification","token":"x","challenge":%q}`, mark("a forged Slack challenge"))
	send("slack forged handshake", 403, "POST", sl, slackHeader(marker("wrong"), hs), hs)

	// Meta: the subscription handshake with the right and a wrong verify token.
	verify := marker("verify")
	_, mt := endpoint("meta", []string{marker("meta")}, map[string]any{"verify_token": verify})
	never["Meta's verify token"] = verify
	q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {verify}, "hub.challenge": {mark("a Meta challenge")}}
	send("meta handshake", 200, "GET", mt+"?"+q.Encode(), nil, nil)
	q = url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {mark("a wrong Meta verify token")}, "hub.challenge": {mark("a refused Meta challenge")}}
	send("meta forged handshake", 403, "GET", mt+"?"+q.Encode(), nil, nil)

	// Asana: the X-Hook-Secret handshake, its secret adopted, then a
	// delivery signed with it and a forged one.
	asanaID, as := endpoint("asana", []string{marker("asana")}, nil)
	hookSecret := mark("Asana's X-Hook-Secret")
	send("asana handshake", 200, "POST", as, http.Header{"X-Hook-Secret": {hookSecret}}, nil)
	var handshake string
	eventually(t, 30*time.Second, "the Asana handshake settled", func() bool {
		for _, m := range s.messages(t) {
			if m.Outcome == "challenge" {
				var d struct {
					EndpointID   string `json:"endpoint_id"`
					ConnectionID string `json:"connection_id"`
				}
				s.api(t, "GET", "/api/v1/messages/"+m.ID, nil, &d)
				if d.ConnectionID == asanaID {
					handshake = m.ID
				}
			}
		}
		return handshake != ""
	})
	s.api(t, "POST", "/api/v1/connections/"+asanaID+"/adopt-handshake-secret", map[string]any{"message_id": handshake}, nil)
	events := fmt.Appendf(nil, `{"events":[{"action":"changed","resource":{"gid":"1","resource_type":"task","name":%q},"created_at":"2026-12-01T10:00:00Z"}]}`,
		mark("an Asana body's marker"))
	send("asana good", 200, "POST", as, http.Header{"X-Hook-Signature": {hexMAC(hookSecret, events)}}, events)
	forgedHook := hexMAC(marker("wrong"), events)
	never["a forged Asana signature"] = forgedHook
	send("asana forged", 200, "POST", as, http.Header{"X-Hook-Signature": {forgedHook}}, events)

	// Postmark: Basic-auth credentials, right and wrong.
	password := marker("pw")
	_, pm := endpoint("postmark", []string{"intake:" + password}, nil)
	pmSample, err := fixtures.Build("postmark", fixtures.Options{Secret: "intake:" + password, URL: pm})
	if err != nil {
		t.Fatal(err)
	}
	never["the Basic-auth password"] = password
	never["the Basic-auth header"] = strings.TrimPrefix(pmSample.Header.Get("Authorization"), "Basic ")
	send("postmark good", 200, "POST", pm, pmSample.Header, pmSample.Body)
	wrong := "intake:" + mark("a wrong Basic-auth password")
	never["a wrong Basic-auth header"] = base64.StdEncoding.EncodeToString([]byte(wrong))
	send("postmark forged", 200, "POST", pm, http.Header{"Authorization": {"Basic " + never["a wrong Basic-auth header"]},
		"Content-Type": {"application/json"}}, pmSample.Body)

	// A token that names no endpoint is refused and stores nothing.
	unknown := mark("an unknown endpoint token")
	resp, err := http.Post(s.url+"/webhooks/"+unknown, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	eventually(t, 60*time.Second, "every stored message settled", func() bool {
		msgs := s.messages(t)
		for _, m := range msgs {
			if !settled(m.State) {
				return false
			}
		}
		return len(msgs) == accepted
	})
	return never
}

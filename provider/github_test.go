package provider

import (
	"crypto/sha1"
	"net/url"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// GitHub's documented test values, from "Validating webhook deliveries"
// (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation).
const (
	ghDocSecret    = "It's a Secret to Everybody"
	ghDocPayload   = "Hello, World!"
	ghDocSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

const ghPullRequestBody = `{"action":"opened","number":7,` +
	`"pull_request":{"id":1,"node_id":"PR_kwDOABCD5M5abc","title":"Fix"},` +
	`"repository":{"id":2,"node_id":"R_kgDOABCD5A","full_name":"octo/hello"},` +
	`"sender":{"login":"octocat"}}`

func ghRequest(sig, body string, kv ...string) *Request {
	h := headers(kv...)
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	return &Request{Method: "POST", Header: h, Body: []byte(body), ReceivedAt: received}
}

func TestGitHubVerifiesDocumentedExample(t *testing.T) {
	wantVerified(t, adapter(t, "github").Verify(ghRequest(ghDocSignature, ghDocPayload), secrets(ghDocSecret), nil))
}

func TestGitHubAcceptsRotatedSecrets(t *testing.T) {
	wantVerified(t, adapter(t, "github").Verify(ghRequest(ghDocSignature, ghDocPayload), secrets("retired", ghDocSecret), nil))
}

func TestGitHubHasNoTimestampSoOldDeliveriesVerify(t *testing.T) {
	r := ghRequest(ghDocSignature, ghDocPayload)
	r.ReceivedAt = time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	wantVerified(t, adapter(t, "github").Verify(r, secrets(ghDocSecret), nil))
}

func TestGitHubRejects(t *testing.T) {
	sha1Sig := "sha1=" + hexMAC(sha1.New, ghDocSecret, ghDocPayload)
	cases := []struct {
		name    string
		r       *Request
		secrets [][]byte
	}{
		{"tampered body", ghRequest(ghDocSignature, "Hello, World?"), secrets(ghDocSecret)},
		{"wrong secret", ghRequest(ghDocSignature, ghDocPayload), secrets("It's a Secret to Nobody")},
		{"no secrets", ghRequest(ghDocSignature, ghDocPayload), nil},
		{"empty secret", ghRequest("sha256="+sha256Hex("", ghDocPayload), ghDocPayload), secrets("")},
		{"missing header", ghRequest("", ghDocPayload), secrets(ghDocSecret)},
		{"missing prefix", ghRequest(ghDocSignature[len("sha256="):], ghDocPayload), secrets(ghDocSecret)},
		{"wrong prefix", ghRequest("sha1="+ghDocSignature[len("sha256="):], ghDocPayload), secrets(ghDocSecret)},
		{"not hex", ghRequest("sha256=xyz", ghDocPayload), secrets(ghDocSecret)},
		{"truncated signature", ghRequest(ghDocSignature[:40], ghDocPayload), secrets(ghDocSecret)},
		{"sha1 without allow_sha1", ghRequest("", ghDocPayload, "X-Hub-Signature", sha1Sig), secrets(ghDocSecret)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, "github").Verify(c.r, c.secrets, nil))
		})
	}
}

func TestGitHubFallsBackToSHA1OnlyWhenAllowed(t *testing.T) {
	a := adapter(t, "github")
	allow := Config{"allow_sha1": true}
	sha1Sig := "sha1=" + hexMAC(sha1.New, ghDocSecret, ghDocPayload)
	wantVerified(t, a.Verify(ghRequest("", ghDocPayload, "X-Hub-Signature", sha1Sig), secrets(ghDocSecret), allow))
	wantRejected(t, a.Verify(ghRequest("", "tampered", "X-Hub-Signature", sha1Sig), secrets(ghDocSecret), allow))
	// A SHA-256 signature, when present, is the one that counts.
	wantRejected(t, a.Verify(ghRequest("sha256=00", ghDocPayload, "X-Hub-Signature", sha1Sig), secrets(ghDocSecret), allow))

	if err := a.ValidateConfig(Config{"allow_sha1": "yes"}); err == nil {
		t.Error(`ValidateConfig accepted allow_sha1 "yes"`)
	}
}

func TestGitHubInterpretsPullRequestOpened(t *testing.T) {
	r := ghRequest("", ghPullRequestBody, "X-GitHub-Event", "pull_request",
		"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	ev := oneEvent(t, adapter(t, "github"), r, nil)
	if ev.ProviderEventID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || ev.Type != "github.pull_request.opened" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if want := []string{"R_kgDOABCD5A", "PR_kwDOABCD5M5abc"}; !equalStrings(ev.ObjectIDs, want) {
		t.Errorf("ObjectIDs = %v, want %v", ev.ObjectIDs, want)
	}
	if string(ev.Data) != ghPullRequestBody {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestGitHubInterpretsPingWithoutAction(t *testing.T) {
	body := `{"zen":"Design for failure.","hook_id":1,"repository":{"node_id":"R_1"}}`
	ev := oneEvent(t, adapter(t, "github"), ghRequest("", body, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "d1"), nil)
	if ev.Type != "github.ping" || !equalStrings(ev.ObjectIDs, []string{"R_1"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
}

func TestGitHubInterpretsFormEncodedPayload(t *testing.T) {
	body := url.Values{"payload": {`{"action":"closed","issue":{"node_id":"I_9"}}`}}.Encode()
	ev := oneEvent(t, adapter(t, "github"), ghRequest("", body, "X-GitHub-Event", "issues"), nil)
	if ev.Type != "github.issues.closed" || !equalStrings(ev.ObjectIDs, []string{"I_9"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
	if string(ev.Data) != `{"action":"closed","issue":{"node_id":"I_9"}}` {
		t.Errorf("Data = %s, want the decoded payload", ev.Data)
	}
}

func TestGitHubRejectsUninterpretableDeliveriesPermanently(t *testing.T) {
	a := adapter(t, "github")
	_, err := a.Interpret(ghRequest("", ghPullRequestBody), nil)
	wantPermanent(t, err) // no X-GitHub-Event
	_, err = a.Interpret(ghRequest("", "Hello, World!", "X-GitHub-Event", "push"), nil)
	wantPermanent(t, err)
}

package provider

import (
	"strings"
	"testing"
	"time"
)

// Buildkite's SDK vector, from buildkite/go-buildkite,
// buildkite/webhook_test.go (TestValidatePayload): a ping event, its
// X-Buildkite-Signature and the webhook token.
const (
	bkDocBody      = `{"event":"ping","service":{"id":"c9f8372d-c0cd-43dc-9274-768a875cf6ca","provider":"webhook","settings":{"url":"https://server.com/webhooks"}},"organization":{"id":"49801950-1df0-474f-bb56-ad6a930c5cb9","graphql_id":"T3JnYW5pemF0aW9uLS0tZTBmMzk3MgsTksGkxOWYtZTZjNzczZTJiYjEy","url":"https://api.buildkite.com/v2/organizations/acme-inc","web_url":"https://buildkite.com/acme-inc","name":"ACME Inc","slug":"acme-inc","agents_url":"https://api.buildkite.com/v2/organizations/acme-inc/agents","emojis_url":"https://api.buildkite.com/v2/organizations/acme-inc/emojis","created_at":"2021-02-03T20:34:10.486Z","pipelines_url":"https://api.buildkite.com/v2/organizations/acme-inc/pipelines"},"sender":{"id":"c9f8372d-c0cd-43dc-9269-bcbb7f308e3f","name":"ACME Man"}}`
	bkDocSignature = "timestamp=1642080837,signature=582d496ac2d869dd97a3101c4cda346288c49a742592daf582ec64c86449f79c"
	bkDocToken     = "29b1ff5779c76bd48ba6705eb99ff970"
	bkJobBody      = `{"event":"job.finished","job":{"id":"0190e1a3-5c1e-4f7c-9b6d-3a2f1e0d9c8b","state":"passed"},` +
		`"build":{"id":"0190e1a2-7b3c-4d5e-8f90-a1b2c3d4e5f6","number":42,"state":"running"},` +
		`"pipeline":{"id":"0187d6f1-2a3b-4c5d-9e8f-7a6b5c4d3e2f","slug":"my-pipeline"},"sender":{"id":"u1","name":"ACME Man"}}`
)

var bkDocTime = time.Unix(1642080837, 0)

func bkRequest(sig, body string, at time.Time) *Request {
	r := post(body, "X-Buildkite-Event", "ping")
	if sig != "" {
		r.Header.Set("X-Buildkite-Signature", sig)
	}
	r.ReceivedAt = at
	return r
}

func TestBuildkiteVerifiesSDKVector(t *testing.T) {
	r := bkRequest(bkDocSignature, bkDocBody, bkDocTime.Add(time.Minute))
	wantVerified(t, adapter(t, "buildkite").Verify(r, secrets(bkDocToken), nil))
	wantVerified(t, adapter(t, "buildkite").Verify(r, secrets("rotated-out-token", bkDocToken), nil))
}

func TestBuildkiteRejects(t *testing.T) {
	at := bkDocTime
	keys := secrets(bkDocToken)
	wantAllRejected(t, "buildkite", nil, []rejectCase{
		// The SDK's own failing cases.
		{"invalid header (SDK case)", bkRequest("invalid", bkDocBody, at), keys},
		{"signature not hex (SDK case)", bkRequest("timestamp=1642080837,signature=yo", bkDocBody, at), keys},
		{"signature altered (SDK case)", bkRequest(strings.Replace(bkDocSignature, "f", "a", 1), bkDocBody, at), keys},
		{"tampered body", bkRequest(bkDocSignature, bkDocBody+" ", at), keys},
		{"re-dated", bkRequest(strings.Replace(bkDocSignature, "1642080837", "1642080838", 1), bkDocBody, at), keys},
		{"wrong token", bkRequest(bkDocSignature, bkDocBody, at), secrets("29b1ff5779c76bd48ba6705eb99ff971")},
		{"no secrets", bkRequest(bkDocSignature, bkDocBody, at), nil},
		{"stale", bkRequest(bkDocSignature, bkDocBody, at.Add(5*time.Minute+time.Second)), keys},
		{"from the future", bkRequest(bkDocSignature, bkDocBody, at.Add(-5*time.Minute-time.Second)), keys},
		{"two timestamps", bkRequest("timestamp=1,"+bkDocSignature, bkDocBody, at), keys},
		{"neither header", bkRequest("", bkDocBody, at), keys},
	})
}

func TestBuildkiteToleranceIsConfigurable(t *testing.T) {
	r := bkRequest(bkDocSignature, bkDocBody, bkDocTime.Add(9*time.Minute))
	wantRejected(t, adapter(t, "buildkite").Verify(r, secrets(bkDocToken), nil))
	wantVerified(t, adapter(t, "buildkite").Verify(r, secrets(bkDocToken), Config{"tolerance": "10m"}))
}

func TestBuildkiteTokenForm(t *testing.T) {
	token := bkRequest("", bkDocBody, received)
	token.Header.Set("X-Buildkite-Token", bkDocToken)
	wantVerified(t, adapter(t, "buildkite").Verify(token, secrets("old-token", bkDocToken), nil))
	wantRejected(t, adapter(t, "buildkite").Verify(token, secrets("another-token"), nil))
	wantRejected(t, adapter(t, "buildkite").Verify(token, secrets(bkDocToken), Config{"require_signature": true}))

	// A signature that fails is not rescued by a token beside it.
	both := bkRequest(strings.Replace(bkDocSignature, "f", "a", 1), bkDocBody, bkDocTime)
	both.Header.Set("X-Buildkite-Token", bkDocToken)
	wantRejected(t, adapter(t, "buildkite").Verify(both, secrets(bkDocToken), nil))

	if err := adapter(t, "buildkite").ValidateConfig(Config{"require_signature": "yes"}); err == nil {
		t.Error("a non-boolean require_signature was accepted")
	}
}

func TestBuildkiteInterpretsJobAndPing(t *testing.T) {
	job := bkRequest("", bkJobBody, received)
	ev := oneEvent(t, adapter(t, "buildkite"), job, nil)
	// The signed body's event wins over the unsigned header ("ping").
	if ev.Type != "buildkite.job.finished" || ev.ProviderEventID != "job.finished:0190e1a3-5c1e-4f7c-9b6d-3a2f1e0d9c8b" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	want := []string{"0190e1a3-5c1e-4f7c-9b6d-3a2f1e0d9c8b", "0190e1a2-7b3c-4d5e-8f90-a1b2c3d4e5f6", "0187d6f1-2a3b-4c5d-9e8f-7a6b5c4d3e2f"}
	if !equalStrings(ev.ObjectIDs, want) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}

	ping := oneEvent(t, adapter(t, "buildkite"), bkRequest("", bkDocBody, received), nil)
	if ping.Type != "buildkite.ping" || ping.ProviderEventID != "" {
		t.Fatalf("got type %q id %q; a ping names no occurrence", ping.Type, ping.ProviderEventID)
	}

	build := oneEvent(t, adapter(t, "buildkite"), bkRequest("", `{"event":"build.finished","build":{"id":"b1","state":"passed"}}`, received), nil)
	if build.Type != "buildkite.build.finished" || build.ProviderEventID != "" {
		t.Fatalf("got type %q id %q; a build can finish twice", build.Type, build.ProviderEventID)
	}
}

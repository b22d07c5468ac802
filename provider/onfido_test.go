package provider

import (
	"crypto/sha1"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Onfido's SDK vectors, from onfido/onfido-node:
// test/classic-webhook-event-verifier.test.ts (a check.completed event) and
// test/studio-webhook-event-verifier.test.ts (a workflow_task.started
// event), each with its webhook token and hex signature; the SDK's invalid
// signature is the first with its leading a turned b.
const (
	onfidoSDKToken     = "_ABC123abc123ABC123abc123ABC123_"
	onfidoSDKBody      = `{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"check-123","status":"complete","completed_at_iso8601":"2020-01-01T00:00:00Z","href":"https://api.onfido.com/v3/checks/check-123"}}}`
	onfidoSDKSignature = "a0082d7481f9f0a2907583dbe1f344d6d4c0d9989df2fd804f98479f60cd760e"
	onfidoSDKInvalid   = "b0082d7481f9f0a2907583dbe1f344d6d4c0d9989df2fd804f98479f60cd760e"

	onfidoStudioToken     = "YKOC6mkBxi6yK2zlUIrLMvsJMFEZObP5"
	onfidoStudioBody      = `{"payload":{"resource_type":"workflow_task","action":"workflow_task.started","object":{"id":"profile_1eb92","task_spec_id":"profile_1eb92","task_def_id":"profile_data","workflow_run_id":"bc77c6e5-753a-4580-96a6-aaed3e5a8d19","status":"started","started_at_iso8601":"2024-07-10T12:49:09Z","href":"https://api.eu.onfido.com/v3.6/workflow_runs/bc77c6e5-753a-4580-96a6-aaed3e5a8d19/tasks/profile_1eb92"},"resource":{"created_at":"2024-07-10T12:49:09Z","id":"profile_1eb92","workflow_run_id":"bc77c6e5-753a-4580-96a6-aaed3e5a8d19","updated_at":"2024-07-10T12:49:09Z","input":{},"task_def_version":null,"task_def_id":"profile_data","output":null}}}`
	onfidoStudioSignature = "c95a5b785484f6fa1bc25f381b5595d66bf85cb442eefb06aa007802ee6a4dfa"
)

func onfidoRequest(sig, body string) *Request { return post(body, "X-SHA2-Signature", sig) }

func TestOnfidoVerifiesSDKVectors(t *testing.T) {
	a := adapter(t, "onfido")
	wantVerified(t, a.Verify(onfidoRequest(onfidoSDKSignature, onfidoSDKBody), secrets(onfidoSDKToken), nil))
	wantVerified(t, a.Verify(onfidoRequest(onfidoStudioSignature, onfidoStudioBody), secrets(onfidoSDKToken, onfidoStudioToken), nil))
}

func TestOnfidoRejects(t *testing.T) {
	wantAllRejected(t, "onfido", nil, []rejectCase{
		{"SDK's invalid signature", onfidoRequest(onfidoSDKInvalid, onfidoSDKBody), secrets(onfidoSDKToken)},
		{"body changed by one byte", onfidoRequest(onfidoSDKSignature, strings.Replace(onfidoSDKBody, "check-123", "check-124", 1)), secrets(onfidoSDKToken)},
		{"wrong secret", onfidoRequest(onfidoSDKSignature, onfidoSDKBody), secrets(onfidoStudioToken)},
		{"no secrets", onfidoRequest(onfidoSDKSignature, onfidoSDKBody), nil},
		{"empty secret", onfidoRequest(sha256Hex("", onfidoSDKBody), onfidoSDKBody), secrets("")},
		{"missing header", onfidoRequest("", onfidoSDKBody), secrets(onfidoSDKToken)},
		{"the retired SHA-1 signature", post(onfidoSDKBody, "X-Signature", hexMAC(sha1.New, onfidoSDKToken, onfidoSDKBody)), secrets(onfidoSDKToken)},
	})
}

func TestOnfidoInterpretsSDKEvents(t *testing.T) {
	ev := oneEvent(t, adapter(t, "onfido"), onfidoRequest("", onfidoSDKBody), nil)
	if ev.ProviderEventID != "check.completed:check-123:complete:2020-01-01T00:00:00Z" || ev.Type != "onfido.check.completed" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"check-123"}) || string(ev.Data) != onfidoSDKBody {
		t.Errorf("OccurredAt %v ObjectIDs %v Data %s", ev.OccurredAt, ev.ObjectIDs, ev.Data)
	}
	ev = oneEvent(t, adapter(t, "onfido"), onfidoRequest("", onfidoStudioBody), nil)
	if ev.ProviderEventID != "workflow_task.started:profile_1eb92:started:2024-07-10T12:49:09Z" || ev.Type != "onfido.workflow_task.started" ||
		!equalStrings(ev.ObjectIDs, []string{"profile_1eb92", "bc77c6e5-753a-4580-96a6-aaed3e5a8d19"}) {
		t.Fatalf("got %+v", ev)
	}
}

func TestOnfidoBuildsIDsThatTellEventsOfOneObjectApart(t *testing.T) {
	// A check's started and completed events, and a retry of the latter.
	started := strings.NewReplacer("check.completed", "check.started", `"complete"`, `"in_progress"`, "completed_at_iso8601", "created_at_iso8601").Replace(onfidoSDKBody)
	a := oneEvent(t, adapter(t, "onfido"), onfidoRequest("", started), nil)
	b := oneEvent(t, adapter(t, "onfido"), onfidoRequest("", onfidoSDKBody), nil)
	c := oneEvent(t, adapter(t, "onfido"), onfidoRequest("", onfidoSDKBody), nil)
	if a.ProviderEventID == b.ProviderEventID || b.ProviderEventID != c.ProviderEventID {
		t.Fatalf("ids %q %q %q", a.ProviderEventID, b.ProviderEventID, c.ProviderEventID)
	}
}

func TestOnfidoRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"payload":{}}`, `{"action":"check.completed"}`} {
		_, err := adapter(t, "onfido").Interpret(onfidoRequest("", body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// ElevenLabs' SDK test (elevenlabs/elevenlabs-js,
// tests/custom/client.test.ts, "constructEvent") signs its payload at the
// current time, so it fixes no signature; its payload, secret and header
// form are used here, signed at the test's receipt time.
const (
	elevenlabsSDKSecret = "webhook_secret"
	elevenlabsSDKBody   = `{"eventType":"test_event","data":{"id":"123"}}`
	elevenlabsCallBody  = `{"type":"post_call_transcription","event_timestamp":1741944413,"data":{"agent_id":"xyz","conversation_id":"abc","status":"done","transcript":[{"role":"agent","message":"Hello"}]}}`
)

func elevenlabsSig(secret string, at time.Time, body string) string {
	return "t=" + unix(at) + ",v0=" + sha256Hex(secret, unix(at)+"."+body)
}

func elevenlabsRequest(header, body string) *Request {
	return post(body, "ElevenLabs-Signature", header)
}

func TestElevenLabsVerifiesTheSDKTestsPayload(t *testing.T) {
	r := elevenlabsRequest(elevenlabsSig(elevenlabsSDKSecret, received, elevenlabsSDKBody), elevenlabsSDKBody)
	wantVerified(t, adapter(t, "elevenlabs").Verify(r, secrets("an-older-secret", elevenlabsSDKSecret), nil))
}

func TestElevenLabsJudgesOnlyTheSignaturesAge(t *testing.T) {
	a := adapter(t, "elevenlabs")
	for _, at := range []time.Time{received.Add(-30 * time.Minute), received.Add(time.Hour)} {
		wantVerified(t, a.Verify(elevenlabsRequest(elevenlabsSig(elevenlabsSDKSecret, at, elevenlabsSDKBody), elevenlabsSDKBody), secrets(elevenlabsSDKSecret), nil))
	}
	old := elevenlabsRequest(elevenlabsSig(elevenlabsSDKSecret, received.Add(-40*time.Minute), elevenlabsSDKBody), elevenlabsSDKBody)
	wantVerified(t, a.Verify(old, secrets(elevenlabsSDKSecret), Config{"tolerance": "1h"}))
}

func TestElevenLabsRejects(t *testing.T) {
	good := elevenlabsSig(elevenlabsSDKSecret, received, elevenlabsSDKBody)
	wantAllRejected(t, "elevenlabs", nil, []rejectCase{
		{"invalid signature (SDK case)", elevenlabsRequest("t="+unix(received)+",v0=invalid_signature", elevenlabsSDKBody), secrets(elevenlabsSDKSecret)},
		{"invalid format (SDK case)", elevenlabsRequest("invalid_format", elevenlabsSDKBody), secrets(elevenlabsSDKSecret)},
		{"missing header (SDK case)", elevenlabsRequest("", elevenlabsSDKBody), secrets(elevenlabsSDKSecret)},
		{"no secret (SDK case)", elevenlabsRequest(good, elevenlabsSDKBody), secrets("")},
		{"body changed by one byte", elevenlabsRequest(good, strings.Replace(elevenlabsSDKBody, "123", "124", 1)), secrets(elevenlabsSDKSecret)},
		{"wrong secret", elevenlabsRequest(good, elevenlabsSDKBody), secrets("webhook_secreu")},
		{"no secrets", elevenlabsRequest(good, elevenlabsSDKBody), nil},
		{"older than 30 minutes", elevenlabsRequest(elevenlabsSig(elevenlabsSDKSecret, received.Add(-31*time.Minute), elevenlabsSDKBody), elevenlabsSDKBody), secrets(elevenlabsSDKSecret)},
		{"v1 instead of v0", elevenlabsRequest(strings.Replace(good, "v0=", "v1=", 1), elevenlabsSDKBody), secrets(elevenlabsSDKSecret)},
	})
}

func TestElevenLabsBuildsAnIDFromTheConversationAndEventTime(t *testing.T) {
	ev := oneEvent(t, adapter(t, "elevenlabs"), elevenlabsRequest("", elevenlabsCallBody), nil)
	if ev.ProviderEventID != "post_call_transcription:abc:1741944413" || ev.Type != "elevenlabs.post_call_transcription" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Unix(1741944413, 0)) || !equalStrings(ev.ObjectIDs, []string{"abc", "xyz"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
	audio := strings.Replace(elevenlabsCallBody, "post_call_transcription", "post_call_audio", 1)
	if other := oneEvent(t, adapter(t, "elevenlabs"), elevenlabsRequest("", audio), nil); other.ProviderEventID == ev.ProviderEventID {
		t.Errorf("the audio event of the same call shares the id %q", ev.ProviderEventID)
	}
}

func TestElevenLabsNamesAnEventWithoutConversationByItsContent(t *testing.T) {
	body := `{"type":"voice_removal_notice","event_timestamp":1741944413,"data":{"voice_id":"v1"}}`
	a := oneEvent(t, adapter(t, "elevenlabs"), elevenlabsRequest("", body), nil)
	b := oneEvent(t, adapter(t, "elevenlabs"), elevenlabsRequest("", body), nil)
	if !strings.HasPrefix(a.ProviderEventID, "elevenlabs:") || a.ProviderEventID != b.ProviderEventID {
		t.Fatalf("ids %q %q", a.ProviderEventID, b.ProviderEventID)
	}
}

func TestElevenLabsRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", elevenlabsSDKBody, "[]"} {
		_, err := adapter(t, "elevenlabs").Interpret(elevenlabsRequest("", body), nil)
		wantPermanent(t, err)
	}
}

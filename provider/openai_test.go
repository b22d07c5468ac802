package provider

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// SDK vector, from openai/openai-node, tests/api-resources/webhooks.test.ts
// ("taken from a real webhook event"): the secret, headers and body below
// verify at 1750861210.
const (
	openaiSDKSecret    = "whsec_RdvaYFYUXuIFuEbvZHwMfYFhUf7aMYjYcmM24+Aj40c="
	openaiSDKBody      = `{"id": "evt_685c059ae3a481909bdc86819b066fb6", "object": "event", "created_at": 1750861210, "type": "response.completed", "data": {"id": "resp_123"}}`
	openaiSDKSignature = "v1,gUAg4R2hWouRZqRQG4uJypNS8YK885G838+EHb4nKBY="
	openaiSDKID        = "wh_685c059ae39c8190af8c71ed1022a24d"
	openaiSDKTimestamp = "1750861210"
)

var openaiSDKTime = time.Unix(1750861210, 0)

func openaiRequest(id, ts, sig, body string, at time.Time) *Request {
	r := post(body, "webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig)
	r.ReceivedAt = at
	return r
}

func TestOpenAIVerifiesSDKVector(t *testing.T) {
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, openaiSDKSignature, openaiSDKBody, openaiSDKTime)
	wantVerified(t, adapter(t, "openai").Verify(r, secrets(openaiSDKSecret), nil))
}

func TestOpenAIAcceptsAnyOfSeveralSignaturesAndRotatedSecrets(t *testing.T) {
	// The SDK's "multiple signatures when one is valid" case, with the
	// secret second in the connection's list.
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, "v1,invalid_signature "+openaiSDKSignature, openaiSDKBody, openaiSDKTime)
	retired := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the retired key"))
	wantVerified(t, adapter(t, "openai").Verify(r, secrets(retired, openaiSDKSecret), nil))
}

func TestOpenAIReadsASignatureWithoutItsVersionAsV1(t *testing.T) {
	// openai-node and openai-go read every part of webhook-signature not
	// starting "v1," as a bare v1 signature; Standard Webhooks does not
	// (TestStandardRejects).
	bare := strings.TrimPrefix(openaiSDKSignature, "v1,")
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, "v1,invalid_signature "+bare, openaiSDKBody, openaiSDKTime)
	wantVerified(t, adapter(t, "openai").Verify(r, secrets(openaiSDKSecret), nil))
	r.Body = []byte(strings.Replace(openaiSDKBody, "resp_123", "resp_124", 1))
	wantRejected(t, adapter(t, "openai").Verify(r, secrets(openaiSDKSecret), nil))
}

func TestOpenAIUsesASecretWithoutPrefixAsWritten(t *testing.T) {
	// OpenAI's SDKs key the HMAC with such a secret's own bytes, where the
	// Standard Webhooks libraries would base64-decode it.
	raw := "bm90LWJhc2U2NC1idXQtbG9va3MtbGlrZS1pdA=="
	sig := signStandard("whsec_"+base64.StdEncoding.EncodeToString([]byte(raw)), openaiSDKID, openaiSDKTimestamp, openaiSDKBody)
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, sig, openaiSDKBody, openaiSDKTime)
	wantVerified(t, adapter(t, "openai").Verify(r, secrets(raw), nil))

	decoded := signStandard("whsec_"+raw, openaiSDKID, openaiSDKTimestamp, openaiSDKBody)
	r = openaiRequest(openaiSDKID, openaiSDKTimestamp, decoded, openaiSDKBody, openaiSDKTime)
	wantRejected(t, adapter(t, "openai").Verify(r, secrets(raw), nil))
}

func TestOpenAIRejects(t *testing.T) {
	at := openaiSDKTime
	good := func(body string, at time.Time) *Request {
		return openaiRequest(openaiSDKID, openaiSDKTimestamp, openaiSDKSignature, body, at)
	}
	wantAllRejected(t, "openai", nil, []rejectCase{
		{"tampered body", good(strings.Replace(openaiSDKBody, "resp_123", "resp_124", 1), at), secrets(openaiSDKSecret)},
		{"tampered webhook-id", openaiRequest("wh_other", openaiSDKTimestamp, openaiSDKSignature, openaiSDKBody, at), secrets(openaiSDKSecret)},
		{"wrong secret", good(openaiSDKBody, at), secrets(base64.StdEncoding.EncodeToString([]byte("not-the-correct-secret-but-long-enough")))},
		{"no secrets", good(openaiSDKBody, at), nil},
		{"empty secret", good(openaiSDKBody, at), secrets("", "whsec_")},
		{"too old", good(openaiSDKBody, at.Add(301*time.Second)), secrets(openaiSDKSecret)},
		{"too new", good(openaiSDKBody, at.Add(-301*time.Second)), secrets(openaiSDKSecret)},
		{"timestamp not a number", openaiRequest(openaiSDKID, "not-a-number", openaiSDKSignature, openaiSDKBody, at), secrets(openaiSDKSecret)},
		{"missing webhook-id", openaiRequest("", openaiSDKTimestamp, openaiSDKSignature, openaiSDKBody, at), secrets(openaiSDKSecret)},
		{"missing webhook-signature", openaiRequest(openaiSDKID, openaiSDKTimestamp, "", openaiSDKBody, at), secrets(openaiSDKSecret)},
		{"all signatures invalid", openaiRequest(openaiSDKID, openaiSDKTimestamp, "v1,invalid_signature1 v1,invalid_signature2", openaiSDKBody, at), secrets(openaiSDKSecret)},
	})
}

func TestOpenAIToleranceIsConfigurable(t *testing.T) {
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, openaiSDKSignature, openaiSDKBody, openaiSDKTime.Add(400*time.Second))
	wantRejected(t, adapter(t, "openai").Verify(r, secrets(openaiSDKSecret), nil))
	wantVerified(t, adapter(t, "openai").Verify(r, secrets(openaiSDKSecret), Config{"tolerance": "10m"}))
}

func TestOpenAIInterpretsBodyIDNotDeliveryID(t *testing.T) {
	r := openaiRequest(openaiSDKID, openaiSDKTimestamp, openaiSDKSignature, openaiSDKBody, openaiSDKTime)
	ev := oneEvent(t, adapter(t, "openai"), r, nil)
	if ev.ProviderEventID != "evt_685c059ae3a481909bdc86819b066fb6" || ev.Type != "openai.response.completed" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(openaiSDKTime) || !equalStrings(ev.ObjectIDs, []string{"resp_123"}) {
		t.Errorf("OccurredAt %v, ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
	if string(ev.Data) != openaiSDKBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v), want the body", ev.Data, ev.DataTruncated)
	}
}

func TestOpenAIRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"id":"evt_1"}`, "[]"} {
		_, err := adapter(t, "openai").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"crypto/sha256"
	"testing"
	"time"
)

// Typeform publishes no vector with its secret; these requests are signed
// with a known secret as its docs describe: Typeform-Signature:
// sha256=<base64 HMAC-SHA256 of the body>.
const (
	typeformSecret = "typeform-webhook-secret"
	typeformBody   = `{"event_id":"01GQ7FA6V1QK0Y1S7W8S1V1A4C","event_type":"form_response","form_response":` +
		`{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","submitted_at":"2018-01-18T18:17:02Z","answers":[]}}`
)

func typeformRequest(sig string) *Request { return post(typeformBody, "Typeform-Signature", sig) }

func TestTypeformVerifiesSignedDelivery(t *testing.T) {
	sig := "sha256=" + b64MAC(sha256.New, typeformSecret, typeformBody)
	wantVerified(t, adapter(t, "typeform").Verify(typeformRequest(sig), secrets("old", typeformSecret), nil))
}

func TestTypeformRejects(t *testing.T) {
	sig := "sha256=" + b64MAC(sha256.New, typeformSecret, typeformBody)
	tampered := typeformRequest(sig)
	tampered.Body = []byte(typeformBody + " ")
	wantAllRejected(t, "typeform", nil, []rejectCase{
		{"tampered body", tampered, secrets(typeformSecret)},
		{"wrong secret", typeformRequest(sig), secrets("other")},
		{"no secrets", typeformRequest(sig), nil},
		{"missing header", typeformRequest(""), secrets(typeformSecret)},
		{"missing prefix", typeformRequest(sig[7:]), secrets(typeformSecret)},
		{"hex encoding", typeformRequest("sha256=" + sha256Hex(typeformSecret, typeformBody)), secrets(typeformSecret)},
	})
}

func TestTypeformInterpretsFormResponse(t *testing.T) {
	ev := oneEvent(t, adapter(t, "typeform"), typeformRequest(""), nil)
	if ev.Type != "typeform.form_response" || ev.ProviderEventID != "01GQ7FA6V1QK0Y1S7W8S1V1A4C" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"lT4Z3j", "a3a12ec67a1365927098a606107fac15"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2018, 1, 18, 18, 17, 2, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

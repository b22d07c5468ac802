package provider

import (
	"testing"
	"time"
)

// Customer.io publishes no vector with its key; these requests are signed
// as https://docs.customer.io/api/webhooks/ describes (X-CIO-Signature: hex
// HMAC-SHA256 of "v0:" + X-CIO-Timestamp + ":" + body under the webhook
// signing key). The body is the email sent example of that reference.
const (
	cioSecret = "cio-webhook-signing-key-7e1a"
	cioTS     = "1585250199"
	cioBody   = `{"data":{"action_id":36,"campaign_id":23,"customer_id":"user-123","delivery_id":"RAECAAFwnUSneIa0ZXkmb8EK",` +
		`"identifiers":{"id":"user-123"},"recipient":"test@example.com","subject":"Thanks for signing up"},` +
		`"event_id":"01E4C4CT6YDC7Y5M7FE1GWWPQJ","metric":"sent","object_type":"email","timestamp":1585250199}`
)

var cioTime = time.Unix(1585250199, 0)

func cioRequest(sig, ts, body string, at time.Time) *Request {
	r := post(body, "X-CIO-Signature", sig, "X-CIO-Timestamp", ts)
	r.ReceivedAt = at
	return r
}

func cioSign(key, ts, body string) string { return sha256Hex(key, "v0:"+ts+":"+body) }

func TestCustomerioVerifiesSignedDeliveryWithRotatedSecrets(t *testing.T) {
	r := cioRequest(cioSign(cioSecret, cioTS, cioBody), cioTS, cioBody, cioTime)
	wantVerified(t, adapter(t, "customerio").Verify(r, secrets("cio-old-key", cioSecret), nil))
}

func TestCustomerioRejects(t *testing.T) {
	sig := cioSign(cioSecret, cioTS, cioBody)
	wantAllRejected(t, "customerio", nil, []rejectCase{
		{"tampered body", cioRequest(sig, cioTS, cioBody+" ", cioTime), secrets(cioSecret)},
		{"re-dated", cioRequest(sig, "1585250200", cioBody, cioTime), secrets(cioSecret)},
		{"wrong secret", cioRequest(sig, cioTS, cioBody, cioTime), secrets("cio-other-key")},
		{"no secrets", cioRequest(sig, cioTS, cioBody, cioTime), nil},
		{"missing signature", cioRequest("", cioTS, cioBody, cioTime), secrets(cioSecret)},
		{"missing timestamp", cioRequest(sig, "", cioBody, cioTime), secrets(cioSecret)},
		{"body alone signed", cioRequest(sha256Hex(cioSecret, cioBody), cioTS, cioBody, cioTime), secrets(cioSecret)},
	})
}

func TestCustomerioJudgesTheTimestampOnlyWhenToleranceIsSet(t *testing.T) {
	// Customer.io asks for no window: a delivery received a day after it
	// was signed verifies, unless the connection sets a tolerance.
	late := cioRequest(cioSign(cioSecret, cioTS, cioBody), cioTS, cioBody, cioTime.Add(24*time.Hour))
	wantVerified(t, adapter(t, "customerio").Verify(late, secrets(cioSecret), nil))
	wantRejected(t, adapter(t, "customerio").Verify(late, secrets(cioSecret), Config{"tolerance": "5m"}))
	early := cioRequest(cioSign(cioSecret, cioTS, cioBody), cioTS, cioBody, cioTime.Add(-6*time.Minute))
	wantRejected(t, adapter(t, "customerio").Verify(early, secrets(cioSecret), Config{"tolerance": "5m"}))
	onTime := cioRequest(cioSign(cioSecret, cioTS, cioBody), cioTS, cioBody, cioTime.Add(4*time.Minute))
	wantVerified(t, adapter(t, "customerio").Verify(onTime, secrets(cioSecret), Config{"tolerance": "5m"}))
}

func TestCustomerioInterpretsEmailSent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "customerio"), cioRequest("", cioTS, cioBody, cioTime), nil)
	if ev.Type != "customerio.email.sent" || ev.ProviderEventID != "01E4C4CT6YDC7Y5M7FE1GWWPQJ" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"RAECAAFwnUSneIa0ZXkmb8EK", "user-123"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(cioTime) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	_, err := adapter(t, "customerio").Interpret(post(`{"event_id":"e","metric":"sent"}`), nil)
	wantPermanent(t, err)
}

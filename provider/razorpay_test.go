package provider

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Razorpay's SDK vector, from razorpay/razorpay-node,
// test/utils/razorpay-utils.spec.js (validateWebhookSignature): body,
// secret and hex signature reproduce exactly.
const (
	razorpaySDKBody      = `{"a":1,"b":2,"c":{"d":3}}`
	razorpaySDKSecret    = "123456"
	razorpaySDKSignature = "2fe04e22977002e6c7cb553adab8b460cb9e2a4970d5953cb27a8472752e3bbc"
)

// A payment.captured event as https://razorpay.com/docs/webhooks/payments/
// shows it, signed with a known secret by the documented scheme.
const (
	razorpaySecret = "rzp_webhook_secret_7f3a"
	razorpayBody   = `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"payment.captured","contains":["payment"],` +
		`"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","entity":"payment","amount":100,"currency":"INR","status":"captured",` +
		`"order_id":"order_DESlLckIVRkHWj","method":"netbanking","captured":true,"email":"gaurav.kumar@example.com","created_at":1567674599}}},` +
		`"created_at":1567674606}`
)

func razorpayRequest(sig, body string, kv ...string) *Request {
	return post(body, append([]string{"X-Razorpay-Signature", sig}, kv...)...)
}

func TestRazorpayVerifiesSDKVector(t *testing.T) {
	wantVerified(t, adapter(t, "razorpay").Verify(razorpayRequest(razorpaySDKSignature, razorpaySDKBody), secrets(razorpaySDKSecret), nil))
}

func TestRazorpayAcceptsRotatedSecrets(t *testing.T) {
	// Razorpay's docs: after a secret change, retries of older events are
	// still signed with the old secret, so both stay on the connection.
	r := razorpayRequest(sha256Hex(razorpaySecret, razorpayBody), razorpayBody)
	wantVerified(t, adapter(t, "razorpay").Verify(r, secrets("rzp_new_secret", razorpaySecret), nil))
	wantVerified(t, adapter(t, "razorpay").Verify(razorpayRequest(razorpaySDKSignature, razorpaySDKBody), secrets(razorpaySecret, razorpaySDKSecret), nil))
}

func TestRazorpayRejects(t *testing.T) {
	wantAllRejected(t, "razorpay", nil, []rejectCase{
		// The SDK's own negative case.
		{"wrong signature (SDK case)", razorpayRequest("sdfafds", razorpaySDKBody), secrets(razorpaySDKSecret)},
		{"tampered body", razorpayRequest(razorpaySDKSignature, `{"a":1,"b":2,"c":{"d":4}}`), secrets(razorpaySDKSecret)},
		{"wrong secret", razorpayRequest(razorpaySDKSignature, razorpaySDKBody), secrets("1234567")},
		{"no secrets", razorpayRequest(razorpaySDKSignature, razorpaySDKBody), nil},
		{"empty secret", razorpayRequest(sha256Hex("", razorpaySDKBody), razorpaySDKBody), secrets("")},
		{"missing header", razorpayRequest("", razorpaySDKBody), secrets(razorpaySDKSecret)},
		{"base64 instead of hex", razorpayRequest(b64MAC(sha256.New, razorpaySDKSecret, razorpaySDKBody), razorpaySDKBody), secrets(razorpaySDKSecret)},
	})
}

func TestRazorpayInterpretsPaymentCaptured(t *testing.T) {
	r := razorpayRequest("", razorpayBody, "X-Razorpay-Event-Id", "KHjhsbbDWAxgLF")
	ev := oneEvent(t, adapter(t, "razorpay"), r, nil)
	if ev.ProviderEventID != "KHjhsbbDWAxgLF" || ev.Type != "razorpay.payment.captured" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Unix(1567674606, 0)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if !equalStrings(ev.ObjectIDs, []string{"pay_DESlfW9H8K9uqM", "order_DESlLckIVRkHWj"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if string(ev.Data) != razorpayBody || ev.DataTruncated {
		t.Errorf("Data = %s, want the body", ev.Data)
	}
}

func TestRazorpayReadsEveryContainedEntity(t *testing.T) {
	body := `{"entity":"event","event":"refund.processed","contains":["refund","payment"],` +
		`"payload":{"refund":{"entity":{"id":"rfnd_FP8DDKxqJif6ca","payment_id":"pay_FIKOnlyii5QGNx"}},` +
		`"payment":{"entity":{"id":"pay_FIKOnlyii5QGNx","order_id":"order_FIKOhQ5VuJRfXg"}}},"created_at":1600000000}`
	ev := oneEvent(t, adapter(t, "razorpay"), razorpayRequest("", body), nil)
	if ev.Type != "razorpay.refund.processed" || ev.ProviderEventID != "" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"rfnd_FP8DDKxqJif6ca", "pay_FIKOnlyii5QGNx", "order_FIKOhQ5VuJRfXg"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}

func TestRazorpayRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"entity":"event"}`, `{"event":7}`, "[]"} {
		_, err := adapter(t, "razorpay").Interpret(razorpayRequest("", body), nil)
		wantPermanent(t, err)
	}
}

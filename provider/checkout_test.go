package provider

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Checkout.com publishes no signed example; the body is the shape of its
// payment_approved event (https://www.checkout.com/docs/developer-resources/webhooks),
// signed here as its documentation says: hex HMAC-SHA256 of the body.
const (
	checkoutSecret = "a8f1b1c3-9d1e-4f0a-8e2b-6c7d9e0f1a2b"
	checkoutBody   = `{"id":"evt_az5sblvku4ge3dwpztvyizgcau","type":"payment_approved","version":"1.0.0","created_on":"2025-03-14T09:26:50.0000000Z",` +
		`"data":{"id":"pay_mbabizu24mvu3mela5njyhpit4","action_id":"act_y3oqhf46pyzuxjbcn2giaqnb44","amount":6540,"currency":"GBP","approved":true,` +
		`"status":"Authorized","response_code":"10000","processed_on":"2025-03-14T09:26:49Z","reference":"ORD-5023-4E89"},` +
		`"_links":{"self":{"href":"https://api.sandbox.checkout.com/workflows/events/evt_az5sblvku4ge3dwpztvyizgcau"}}}`
)

func checkoutRequest(sig, body string) *Request { return post(body, "Cko-Signature", sig) }

func TestCheckoutVerifiesBodySignature(t *testing.T) {
	sig := sha256Hex(checkoutSecret, checkoutBody)
	wantVerified(t, adapter(t, "checkout").Verify(checkoutRequest(sig, checkoutBody), secrets(checkoutSecret), nil))
	wantVerified(t, adapter(t, "checkout").Verify(checkoutRequest(strings.ToUpper(sig), checkoutBody), secrets("retired", checkoutSecret), nil))
}

func TestCheckoutRejects(t *testing.T) {
	sig := sha256Hex(checkoutSecret, checkoutBody)
	wantAllRejected(t, "checkout", nil, []rejectCase{
		{"body changed by one byte", checkoutRequest(sig, strings.Replace(checkoutBody, "6540", "6541", 1)), secrets(checkoutSecret)},
		{"wrong secret", checkoutRequest(sig, checkoutBody), secrets("another-secret")},
		{"no secrets", checkoutRequest(sig, checkoutBody), nil},
		{"empty secret", checkoutRequest(sha256Hex("", checkoutBody), checkoutBody), secrets("")},
		{"missing header", checkoutRequest("", checkoutBody), secrets(checkoutSecret)},
		{"signature not hex", checkoutRequest("not-hex", checkoutBody), secrets(checkoutSecret)},
	})
}

func TestCheckoutInterpretsTheEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "checkout"), post(checkoutBody), nil)
	if ev.ProviderEventID != "evt_az5sblvku4ge3dwpztvyizgcau" || ev.Type != "checkout.payment_approved" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"pay_mbabizu24mvu3mela5njyhpit4", "ORD-5023-4E89"}) || ev.OccurredAt.Format("2006-01-02T15:04:05Z07:00") != "2025-03-14T09:26:50Z" {
		t.Errorf("ObjectIDs %v OccurredAt %v", ev.ObjectIDs, ev.OccurredAt)
	}
	if string(ev.Data) != checkoutBody {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestCheckoutRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"id":"evt_1"}`, "[]"} {
		_, err := adapter(t, "checkout").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Lemon Squeezy publishes no secret/payload/signature triple; these requests
// are signed with a known signing secret as
// https://docs.lemonsqueezy.com/help/webhooks/signing-requests describes:
// X-Signature is the hex HMAC-SHA256 of the raw body. The body is the
// order_created example of https://docs.lemonsqueezy.com/help/webhooks/webhook-requests.
const (
	lsSecret = "ls-signing-secret-31"
	lsBody   = `{"meta":{"event_name":"order_created","custom_data":{"customer_id":25}},"data":{"type":"orders","id":"1",` +
		`"attributes":{"store_id":1,"customer_id":1,"identifier":"636f855c-1fb9-4c07-b75c-3a10afef010a","order_number":1,` +
		`"user_name":"Darlene Daugherty","user_email":"gernser@yahoo.com","currency":"USD","subtotal":999,"total":1199,"status":"paid",` +
		`"created_at":"2021-08-17T09:45:53.000000Z","updated_at":"2021-08-17T09:45:53.000000Z"}}}`
)

func lsRequest(sig, body string) *Request {
	return post(body, "X-Signature", sig, "X-Event-Name", "order_created")
}

func TestLemonSqueezyVerifiesSignedDelivery(t *testing.T) {
	// Computed by hand from the documented recipe, not through the adapter's
	// helpers, so a shared mistake cannot hide.
	wantVerified(t, adapter(t, "lemonsqueezy").Verify(lsRequest(sha256Hex(lsSecret, lsBody), lsBody), secrets(lsSecret), nil))
}

func TestLemonSqueezyAcceptsRotatedSecrets(t *testing.T) {
	r := lsRequest(sha256Hex(lsSecret, lsBody), lsBody)
	wantVerified(t, adapter(t, "lemonsqueezy").Verify(r, secrets("ls-retired-secret", lsSecret), nil))
}

func TestLemonSqueezyRejects(t *testing.T) {
	sig := sha256Hex(lsSecret, lsBody)
	wantAllRejected(t, "lemonsqueezy", nil, []rejectCase{
		{"tampered body", lsRequest(sig, strings.Replace(lsBody, `"total":1199`, `"total":1`, 1)), secrets(lsSecret)},
		{"wrong secret", lsRequest(sig, lsBody), secrets("ls-other-secret")},
		{"no secrets", lsRequest(sig, lsBody), nil},
		{"empty secret", lsRequest(sha256Hex("", lsBody), lsBody), secrets("")},
		{"missing header", lsRequest("", lsBody), secrets(lsSecret)},
		{"base64 instead of hex", lsRequest(b64MAC(sha256.New, lsSecret, lsBody), lsBody), secrets(lsSecret)},
		{"sha256= prefix", lsRequest("sha256="+sig, lsBody), secrets(lsSecret)},
	})
}

func TestLemonSqueezyInterpretsOrderCreated(t *testing.T) {
	ev := oneEvent(t, adapter(t, "lemonsqueezy"), lsRequest("", lsBody), nil)
	if ev.Type != "lemonsqueezy.order_created" || ev.Kind != intake.KindEvent ||
		ev.ProviderEventID != "order_created:orders:1:2021-08-17T09:45:53.000000Z" {
		t.Fatalf("got type %q kind %q id %q", ev.Type, ev.Kind, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"orders/1", "customers/1"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2021, 8, 17, 9, 45, 53, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != lsBody {
		t.Errorf("Data = %s, want the body with its custom_data", ev.Data)
	}
}

func TestLemonSqueezyTellsLaterChangesOfOneSubscriptionApart(t *testing.T) {
	body := func(updated string) string {
		return `{"meta":{"event_name":"subscription_updated"},"data":{"type":"subscriptions","id":"1",` +
			`"attributes":{"order_id":2,"customer_id":2,"status":"active","updated_at":"` + updated + `"}}}`
	}
	a := oneEvent(t, adapter(t, "lemonsqueezy"), lsRequest("", body("2023-01-24T12:43:48.000000Z")), nil)
	b := oneEvent(t, adapter(t, "lemonsqueezy"), lsRequest("", body("2023-02-24T12:43:48.000000Z")), nil)
	again := oneEvent(t, adapter(t, "lemonsqueezy"), lsRequest("", body("2023-01-24T12:43:48.000000Z")), nil)
	if a.ProviderEventID == "" || a.ProviderEventID == b.ProviderEventID || a.ProviderEventID != again.ProviderEventID {
		t.Fatalf("ids %q, %q, retry %q", a.ProviderEventID, b.ProviderEventID, again.ProviderEventID)
	}
	if !equalStrings(a.ObjectIDs, []string{"subscriptions/1", "orders/2", "customers/2"}) {
		t.Errorf("ObjectIDs = %v", a.ObjectIDs)
	}
}

func TestLemonSqueezyRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"data":{"type":"orders","id":"1"}}`, `{"meta":{"event_name":3}}`, "[]"} {
		r := post(body, "X-Signature", "")
		_, err := adapter(t, "lemonsqueezy").Interpret(r, nil)
		wantPermanent(t, err)
	}
}

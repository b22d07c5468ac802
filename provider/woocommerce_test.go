package provider

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// WooCommerce publishes no secret/payload/signature triple. The body is an
// order as https://woocommerce.github.io/woocommerce-rest-api-docs/#order-properties
// shows it (abridged), and the signature was computed outside Go (Python's
// hmac) as WC_Webhook::generate_signature does in woocommerce's
// includes/class-wc-webhook.php: base64 of the HMAC-SHA256 of the body.
const (
	wcSecret = "wc-webhook-secret-9f2e"
	wcBody   = `{"id":727,"parent_id":0,"number":"727","order_key":"wc_order_58d2d042d1d","created_via":"rest-api","version":"3.0.0",` +
		`"status":"processing","currency":"USD","date_created":"2017-03-22T16:28:02","date_created_gmt":"2017-03-22T19:28:02",` +
		`"date_modified":"2017-03-22T16:28:08","date_modified_gmt":"2017-03-22T19:28:08","total":"29.35","customer_id":0,` +
		`"billing":{"first_name":"John","last_name":"Doe","email":"john.doe@example.com"},"payment_method":"bacs","transaction_id":"",` +
		`"line_items":[{"id":315,"name":"Woo Single #1","product_id":93,"quantity":2,"total":"6.00"}]}`
	wcSignature  = "ChUawY1D/cVMVcygUY3DN+Oa2SNCa2ri0apEraQauF0="
	wcDeliveryID = "9a8f8a8e1f3c2b7d6e5f4a3b2c1d0e9f"
)

// wcRequest is a delivery with the headers WC_Webhook::deliver sends.
func wcRequest(sig, body string) *Request {
	return post(body, "X-WC-Webhook-Source", "https://shop.example.com/", "X-WC-Webhook-Topic", "order.created",
		"X-WC-Webhook-Resource", "order", "X-WC-Webhook-Event", "created", "X-WC-Webhook-Signature", sig,
		"X-WC-Webhook-ID", "14", "X-WC-Webhook-Delivery-ID", wcDeliveryID)
}

// wcPing is WC_Webhook::deliver_ping's request: a form body, no signature.
func wcPing(body string) *Request {
	return post(body, "Content-Type", "application/x-www-form-urlencoded")
}

func TestWooCommerceVerifiesSignedDelivery(t *testing.T) {
	wantVerified(t, adapter(t, "woocommerce").Verify(wcRequest(wcSignature, wcBody), secrets(wcSecret), nil))
}

func TestWooCommerceAcceptsRotatedSecrets(t *testing.T) {
	wantVerified(t, adapter(t, "woocommerce").Verify(wcRequest(wcSignature, wcBody), secrets("wc-previous-secret", wcSecret), nil))
	unpadded := strings.TrimRight(wcSignature, "=")
	wantVerified(t, adapter(t, "woocommerce").Verify(wcRequest(unpadded, wcBody), secrets(wcSecret), nil))
}

func TestWooCommerceRejects(t *testing.T) {
	wantAllRejected(t, "woocommerce", nil, []rejectCase{
		{"tampered body", wcRequest(wcSignature, strings.Replace(wcBody, `"total":"29.35"`, `"total":"0.01"`, 1)), secrets(wcSecret)},
		{"wrong secret", wcRequest(wcSignature, wcBody), secrets("wc-other-secret")},
		{"no secrets", wcRequest(wcSignature, wcBody), nil},
		{"empty secret", wcRequest(b64MAC(sha256.New, "", wcBody), wcBody), secrets("")},
		{"missing header", wcRequest("", wcBody), secrets(wcSecret)},
		{"hex instead of base64", wcRequest(sha256Hex(wcSecret, wcBody), wcBody), secrets(wcSecret)},
		{"not base64", wcRequest("***", wcBody), secrets(wcSecret)},
		// A ping carries nothing but the id; anything more must be signed.
		{"ping with more fields", wcPing("webhook_id=14&status=completed"), secrets(wcSecret)},
		{"ping with a non-numeric id", wcPing("webhook_id=14x"), secrets(wcSecret)},
	})
}

func TestWooCommerceAnswersPing(t *testing.T) {
	a := adapter(t, "woocommerce")
	ping := wcPing("webhook_id=14")
	c, ok := a.(Challenger).Challenge(ping, nil, nil)
	if !ok || c.Status != 200 {
		t.Fatalf("Challenge = %+v, %v; want 200 (WooCommerce accepts nothing else)", c, ok)
	}
	wantVerified(t, a.Verify(ping, nil, nil))
	in, err := a.Interpret(ping, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 || in.EventType != "woocommerce.ping" {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
	if _, ok := a.(Challenger).Challenge(wcRequest(wcSignature, wcBody), nil, nil); ok {
		t.Error("a delivery was answered as a ping")
	}
	signed := wcPing("webhook_id=14")
	signed.Header.Set("X-WC-Webhook-Signature", "AAAA")
	if _, ok := a.(Challenger).Challenge(signed, nil, nil); ok {
		t.Error("a signed request was answered as a ping")
	}
	wantRejected(t, a.Verify(signed, secrets(wcSecret), nil))
}

func TestWooCommerceInterpretsOrderCreated(t *testing.T) {
	ev := oneEvent(t, adapter(t, "woocommerce"), wcRequest(wcSignature, wcBody), nil)
	if ev.Type != "woocommerce.order.created" || ev.Kind != intake.KindEvent || ev.ProviderEventID != wcDeliveryID+":727" {
		t.Fatalf("got type %q kind %q id %q", ev.Type, ev.Kind, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"727"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2017, 3, 22, 19, 28, 8, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v, want date_modified_gmt", ev.OccurredAt)
	}
	if string(ev.Data) != wcBody {
		t.Errorf("Data = %s, want the body", ev.Data)
	}
}

func TestWooCommerceTellsResourcesOfOneDeliverySecondApart(t *testing.T) {
	// Bulk edits deliver several products within a second: the delivery
	// id repeats, the product does not.
	a := oneEvent(t, adapter(t, "woocommerce"), wcRequest("", `{"id":93}`), nil)
	b := oneEvent(t, adapter(t, "woocommerce"), wcRequest("", `{"id":94}`), nil)
	if a.ProviderEventID == b.ProviderEventID {
		t.Fatalf("both named %q", a.ProviderEventID)
	}
}

func TestWooCommerceTypesCustomActionTopics(t *testing.T) {
	r := wcRequest("", `{"action":"woocommerce_add_to_cart","arg":"e369853df766fa44e1ed0ff613f563bd"}`)
	r.Header.Set("X-WC-Webhook-Topic", "action.woocommerce_add_to_cart")
	ev := oneEvent(t, adapter(t, "woocommerce"), r, nil)
	if ev.Type != "woocommerce.action.woocommerce_add_to_cart" || ev.ProviderEventID != "" {
		t.Fatalf("got type %q id %q; an action without an id is deduplicated by its body", ev.Type, ev.ProviderEventID)
	}
}

func TestWooCommerceRejectsUninterpretableDeliveriesPermanently(t *testing.T) {
	noTopic := post(wcBody, "X-WC-Webhook-Signature", wcSignature)
	_, err := adapter(t, "woocommerce").Interpret(noTopic, nil)
	wantPermanent(t, err)
	_, err = adapter(t, "woocommerce").Interpret(wcRequest(wcSignature, "[1]"), nil)
	wantPermanent(t, err)
}

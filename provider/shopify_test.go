package provider

import (
	"crypto/sha256"
	"testing"
	"time"
)

// Shopify publishes no vector with its secret; these requests are signed
// with a known client secret as https://shopify.dev/docs/apps/build/webhooks/subscribe/https
// describes: X-Shopify-Hmac-Sha256 is the base64 HMAC-SHA256 of the raw body.
const (
	shopifySecret = "shpss_0123456789abcdef0123456789abcdef"
	shopifyBody   = `{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","email":"jon@example.com","total_price":"403.00"}`
)

func shopifyRequest(sig string, kv ...string) *Request {
	return post(shopifyBody, append([]string{"X-Shopify-Hmac-Sha256", sig}, kv...)...)
}

func TestShopifyVerifiesSignedDelivery(t *testing.T) {
	sig := b64MAC(sha256.New, shopifySecret, shopifyBody)
	wantVerified(t, adapter(t, "shopify").Verify(shopifyRequest(sig), secrets("shpss_old", shopifySecret), nil))
}

func TestShopifyRejects(t *testing.T) {
	sig := b64MAC(sha256.New, shopifySecret, shopifyBody)
	tampered := shopifyRequest(sig)
	tampered.Body = []byte(`{"id":820982911946154508,"total_price":"0.01"}`)
	wantAllRejected(t, "shopify", nil, []rejectCase{
		{"tampered body", tampered, secrets(shopifySecret)},
		{"wrong secret", shopifyRequest(sig), secrets("shpss_other")},
		{"no secrets", shopifyRequest(sig), nil},
		{"missing header", shopifyRequest(""), secrets(shopifySecret)},
		{"hex instead of base64", shopifyRequest(sha256Hex(shopifySecret, shopifyBody)), secrets(shopifySecret)},
		{"not base64", shopifyRequest("***"), secrets(shopifySecret)},
	})
}

func TestShopifyInterpretsOrderCreate(t *testing.T) {
	r := shopifyRequest("", "X-Shopify-Topic", "orders/create", "X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5",
		"X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "X-Shopify-Triggered-At", "2023-03-29T18:00:27.877041743Z")
	ev := oneEvent(t, adapter(t, "shopify"), r, nil)
	if ev.Type != "shopify.orders.create" || ev.ProviderEventID != "orders/create:98880550-7158-44d4-b7cd-2c97c8a091b5" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"820982911946154508", "gid://shopify/Order/820982911946154508"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2023, 3, 29, 18, 0, 27, 877041743, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != shopifyBody {
		t.Errorf("Data = %s; the order id must stay exact", ev.Data)
	}
}

func TestShopifyKeepsOneEventOfSeveralTopicsApart(t *testing.T) {
	// One change can fire products/create and products/update with the same
	// event id; they must not collide as duplicates.
	a := oneEvent(t, adapter(t, "shopify"), shopifyRequest("", "X-Shopify-Topic", "products/create", "X-Shopify-Event-Id", "e1"), nil)
	b := oneEvent(t, adapter(t, "shopify"), shopifyRequest("", "X-Shopify-Topic", "products/update", "X-Shopify-Event-Id", "e1"), nil)
	if a.ProviderEventID == b.ProviderEventID {
		t.Fatalf("both topics named %q", a.ProviderEventID)
	}
}

func TestShopifyRejectsDeliveryWithoutTopicPermanently(t *testing.T) {
	_, err := adapter(t, "shopify").Interpret(shopifyRequest(""), nil)
	wantPermanent(t, err)
}

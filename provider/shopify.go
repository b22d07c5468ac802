package provider

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// shopifyAdapter verifies Shopify webhooks: X-Shopify-Hmac-Sha256 is the
// base64 HMAC-SHA256 of the body under the app's client secret, used as
// written (https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook).
// Shopify signs no timestamp.
type shopifyAdapter struct{}

func init() { Register(shopifyAdapter{}) }

func (shopifyAdapter) Name() string { return "shopify" }

func (shopifyAdapter) ValidateConfig(Config) error { return nil }

func (shopifyAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Shopify-Hmac-Sha256", "Shopify-Hmac-Sha256")
	if header == "" {
		return sigError("shopify: X-Shopify-Hmac-Sha256 header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("shopify: X-Shopify-Hmac-Sha256 is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("shopify: no signature matches")
}

func (shopifyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	topic := headerValue(r.Header, "X-Shopify-Topic", "Shopify-Topic")
	if topic == "" {
		return Interpretation{}, Permanent("shopify: X-Shopify-Topic header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("shopify: body is not a JSON object: %v", err)
	}
	spec := EventSpec{
		// "orders/create" → shopify.orders.create
		Type: "shopify." + typeSegment(strings.ReplaceAll(topic, "/", ".")),
		Kind: intake.KindEvent,
	}
	// Shopify names duplicates by X-Shopify-Event-Id
	// (https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates); one
	// change can fire several topics, so the topic is part of the id.
	if id := headerValue(r.Header, "X-Shopify-Event-Id", "X-Shopify-Webhook-Id", "Shopify-Webhook-Id"); id != "" {
		spec.ProviderEventID = topic + ":" + id
	}
	if at, err := time.Parse(time.RFC3339Nano, headerValue(r.Header, "X-Shopify-Triggered-At")); err == nil {
		spec.OccurredAt = at.UTC()
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["id"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "admin_graphql_api_id"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

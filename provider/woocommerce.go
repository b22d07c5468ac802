package provider

import (
	"crypto/sha256"
	"net/http"
	"regexp"
	"time"

	"github.com/intakehq/intake"
)

// woocommerceAdapter verifies WooCommerce webhooks: X-WC-Webhook-Signature
// is the base64 HMAC-SHA256 of the raw body under the webhook's secret
// (https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks;
// WC_Webhook::generate_signature in woocommerce's
// includes/class-wc-webhook.php). Saving a webhook sends an unsigned ping,
// "webhook_id=<id>" as a form, that must be answered 200. WooCommerce signs
// no timestamp and does not retry a failed delivery.
type woocommerceAdapter struct{}

func init() { Register(woocommerceAdapter{}) }

func (woocommerceAdapter) Name() string { return "woocommerce" }

func (woocommerceAdapter) ValidateConfig(Config) error { return nil }

// woocommercePingBody is the whole body of WC_Webhook::deliver_ping.
var woocommercePingBody = regexp.MustCompile(`^webhook_id=[0-9]+$`)

// woocommercePing reports whether r is the ping sent when a webhook is
// saved: unsigned, and nothing but the webhook's id.
func woocommercePing(r *Request) bool {
	return r.Method == http.MethodPost && headerValue(r.Header, "X-WC-Webhook-Signature") == "" &&
		woocommercePingBody.Match(r.Body)
}

// Challenge answers the ping 200: WooCommerce refuses to activate the
// webhook on any other status, 2xx ones included (WC_Webhook::deliver_ping).
func (woocommerceAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	if !woocommercePing(r) {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, ContentType: "application/json", Body: []byte(`{"ok":true}`)}, true
}

func (woocommerceAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if woocommercePing(r) {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-WC-Webhook-Signature")
	if header == "" {
		return sigError("woocommerce: X-WC-Webhook-Signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("woocommerce: X-WC-Webhook-Signature is not base64")
	}
	// The secret as shown in WooCommerce's webhook settings, used as written.
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("woocommerce: no signature matches")
}

func (woocommerceAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if woocommercePing(r) {
		return Interpretation{EventType: "woocommerce.ping", Kind: intake.KindEvent, Challenge: true}, nil
	}
	topic := headerValue(r.Header, "X-WC-Webhook-Topic")
	if topic == "" {
		if resource, event := headerValue(r.Header, "X-WC-Webhook-Resource"), headerValue(r.Header, "X-WC-Webhook-Event"); resource != "" && event != "" {
			topic = resource + "." + event
		}
	}
	if topic == "" {
		return Interpretation{}, Permanent("woocommerce: X-WC-Webhook-Topic header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("woocommerce: body is not a JSON object: %v", err)
	}
	object := idString(m["id"])
	spec := EventSpec{
		// X-WC-Webhook-Delivery-ID hashes the webhook id and the second of
		// delivery, so two deliveries of one webhook in the same second
		// share it; the resource id tells them apart. WooCommerce never
		// retries, so no retry can change either.
		ProviderEventID: joinID(headerValue(r.Header, "X-WC-Webhook-Delivery-ID"), object),
		// "order.created" → woocommerce.order.created; custom topics
		// "action.<hook>" keep their hook name.
		Type:       "woocommerce." + typeSegment(topic),
		Kind:       intake.KindEvent,
		OccurredAt: woocommerceTime(firstOf(str(m, "date_modified_gmt"), str(m, "date_created_gmt"))),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, object)
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// woocommerceTime reads the REST API's *_gmt times, which carry no zone.
func woocommerceTime(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

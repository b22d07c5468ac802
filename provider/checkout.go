package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// checkoutAdapter verifies Checkout.com webhooks
// (https://www.checkout.com/docs/developer-resources/webhooks):
// Cko-Signature is the hex HMAC-SHA256 of the raw body under the webhook's
// signature key. Checkout.com signs no time. The body is one event:
// {"id":"evt_…","type":"payment_approved","created_on":…,"data":{"id":"pay_…",…}}.
type checkoutAdapter struct{}

func init() { Register(checkoutAdapter{}) }

func (checkoutAdapter) Name() string { return "checkout" }

func (checkoutAdapter) ValidateConfig(Config) error { return nil }

func (checkoutAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Cko-Signature")
	if header == "" {
		return sigError("checkout: Cko-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("checkout: no signature matches")
}

func (checkoutAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("checkout: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("checkout: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "checkout." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_on"]),
	}
	// data.id is the payment (pay_…) or other object; reference is the
	// merchant's own name for a payment.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "data", "reference"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

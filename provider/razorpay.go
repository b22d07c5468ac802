package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// razorpayAdapter verifies Razorpay webhooks: X-Razorpay-Signature is the
// hex HMAC-SHA256 of the raw body under the webhook secret
// (https://razorpay.com/docs/webhooks/validate-test/). Razorpay signs no
// timestamp; x-razorpay-event-id names the event across its retries.
type razorpayAdapter struct{}

func init() { Register(razorpayAdapter{}) }

func (razorpayAdapter) Name() string { return "razorpay" }

func (razorpayAdapter) ValidateConfig(Config) error { return nil }

func (razorpayAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Razorpay-Signature")
	if header == "" {
		return sigError("razorpay: X-Razorpay-Signature header missing")
	}
	// The secret is used as written, as Razorpay's SDKs use it.
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("razorpay: no signature matches")
}

func (razorpayAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("razorpay: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("razorpay: body has no event")
	}
	spec := EventSpec{
		// Razorpay's documented idempotency key, the same on every retry.
		ProviderEventID: headerValue(r.Header, "X-Razorpay-Event-Id"),
		Type:            "razorpay." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	// payload holds one entity per name in contains: the payment, its
	// order, a refund, a subscription, …; each id is prefixed (pay_,
	// order_, rfnd_), so ids of different entities never collide.
	contains, _ := m["contains"].([]any)
	for _, c := range contains {
		if name, ok := c.(string); ok {
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "payload", name, "entity", "id")))
		}
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "payload", "payment", "entity", "order_id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/sha512"

	"github.com/intakehq/intake"
)

// paystackAdapter verifies Paystack webhooks: x-paystack-signature is the
// hex HMAC-SHA512 of the raw body under the account's secret key
// (https://paystack.com/docs/payments/webhooks/#verify-event-origin).
// Paystack signs no timestamp and sends no event id.
type paystackAdapter struct{}

func init() { Register(paystackAdapter{}) }

func (paystackAdapter) Name() string { return "paystack" }

func (paystackAdapter) ValidateConfig(Config) error { return nil }

func (paystackAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Paystack-Signature")
	if header == "" {
		return sigError("paystack: x-paystack-signature header missing")
	}
	// The secret key (sk_live_…, sk_test_…) is the key as written.
	if anyKeySigned(sha512.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("paystack: no signature matches")
}

func (paystackAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("paystack: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("paystack: body has no event")
	}
	typ := "paystack." + typeSegment(event)
	// subscription.expiring_cards lists one card per subscription: each is
	// an event of its own.
	if items, ok := m["data"].([]any); ok {
		var specs []EventSpec
		for _, it := range items {
			item, ok := it.(map[string]any)
			if !ok {
				continue
			}
			subscription := str(item, "subscription", "subscription_code")
			spec := EventSpec{
				ProviderEventID: firstOf(joinID(event, subscription, str(item, "expiry_date")), itemDigest("paystack:", item)),
				Type:            typ,
				Kind:            intake.KindEvent,
			}
			spec.ObjectIDs = appendID(spec.ObjectIDs, subscription)
			spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "customer", "customer_code"))
			spec.Data, spec.DataTruncated = itemData(item)
			specs = append(specs, spec)
		}
		return batch("paystack", "", specs), nil
	}
	data, _ := m["data"].(map[string]any)
	spec := EventSpec{
		ProviderEventID: paystackEventID(event, data),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt: firstTime(unixTime(data["paid_at"]), unixTime(data["updated_at"]), unixTime(data["updatedAt"]),
			unixTime(data["created_at"]), unixTime(data["createdAt"])),
	}
	// reference is the merchant's own (set when the transaction or
	// transfer was initialized), the natural key for a subject link.
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(data, "reference"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(data["id"]))
	for _, f := range []string{"transfer_code", "subscription_code", "invoice_code", "request_code", "transaction_reference"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(data, f))
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(data, "subscription", "subscription_code"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(data, "customer", "customer_code"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// paystackEventID names an event Paystack sends without an id, from fields
// a retry (the same body, for up to 72 hours) repeats: the event, the
// object it is about, and that object's version: its updated_at, or else
// its status, so a later event about the same object (a dispute reminded
// again, an invoice.update that fails and then succeeds) is not taken for
// a retry. "" when the object has no id, and the body digest decides.
func paystackEventID(event string, data map[string]any) string {
	object := firstOf(idString(data["id"]), str(data, "invoice_code"), str(data, "subscription_code"),
		str(data, "transfer_code"), str(data, "refund_reference"), str(data, "request_code"),
		str(data, "reference"), str(data, "customer_code"))
	version := firstOf(str(data, "updated_at"), str(data, "updatedAt"), str(data, "status"))
	if object == "" {
		return ""
	}
	if version == "" {
		return joinID(event, object)
	}
	return joinID(event, object, version)
}

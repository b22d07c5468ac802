package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// lemonsqueezyAdapter verifies Lemon Squeezy webhooks: X-Signature is the
// hex HMAC-SHA256 of the raw body under the webhook's signing secret
// (https://docs.lemonsqueezy.com/help/webhooks/signing-requests). The body
// is a JSON:API resource with meta.event_name; Lemon Squeezy signs no
// timestamp and sends no event id.
type lemonsqueezyAdapter struct{}

func init() { Register(lemonsqueezyAdapter{}) }

func (lemonsqueezyAdapter) Name() string { return "lemonsqueezy" }

func (lemonsqueezyAdapter) ValidateConfig(Config) error { return nil }

func (lemonsqueezyAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Signature")
	if header == "" {
		return sigError("lemonsqueezy: X-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("lemonsqueezy: no signature matches")
}

func (lemonsqueezyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("lemonsqueezy: body is not a JSON object: %v", err)
	}
	event := firstOf(str(m, "meta", "event_name"), headerValue(r.Header, "X-Event-Name"))
	if event == "" {
		return Interpretation{}, Permanent("lemonsqueezy: body has no meta.event_name")
	}
	resource := str(m, "data", "type")
	id := idString(lookup(m, "data", "id"))
	updated := str(m, "data", "attributes", "updated_at")
	spec := EventSpec{
		// No event id is sent. A retry repeats the event, the resource and
		// its updated_at; a later change of the same resource moves
		// updated_at, so it is another event.
		ProviderEventID: joinID(event, resource, id, updated),
		Type:            "lemonsqueezy." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(updated),
	}
	// Ids count up per resource type (order 1, subscription 1), so each is
	// named with its type as the API's path does: "orders/1".
	spec.ObjectIDs = appendID(spec.ObjectIDs, lemonsqueezyObject(resource, id))
	for _, rel := range []struct{ field, resource string }{
		{"order_id", "orders"}, {"subscription_id", "subscriptions"}, {"customer_id", "customers"},
	} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, lemonsqueezyObject(rel.resource, idString(lookup(m, "data", "attributes", rel.field))))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// lemonsqueezyObject names a resource as "<type>/<id>"; "" when either is
// missing.
func lemonsqueezyObject(resource, id string) string {
	if resource == "" || id == "" {
		return ""
	}
	return resource + "/" + id
}

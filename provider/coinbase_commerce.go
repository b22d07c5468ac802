package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"

	"github.com/intakehq/intake"
)

// coinbaseCommerceAdapter verifies Coinbase Commerce webhooks:
// X-CC-Webhook-Signature is the hex HMAC-SHA256 of the raw body under the
// endpoint's shared secret
// (https://docs.cdp.coinbase.com/commerce/api-arcitecture/webhooks-overview).
// The body wraps one event with delivery fields (attempt_number,
// scheduled_for); Coinbase signs no timestamp.
type coinbaseCommerceAdapter struct{}

func init() { Register(coinbaseCommerceAdapter{}) }

func (coinbaseCommerceAdapter) Name() string { return "coinbase_commerce" }

func (coinbaseCommerceAdapter) ValidateConfig(Config) error { return nil }

func (coinbaseCommerceAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-CC-Webhook-Signature")
	if header == "" {
		return sigError("coinbase_commerce: X-CC-Webhook-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("coinbase_commerce: no signature matches")
}

func (coinbaseCommerceAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("coinbase_commerce: body is not a JSON object: %v", err)
	}
	event, _ := m["event"].(map[string]any)
	typ := str(event, "type")
	if typ == "" {
		return Interpretation{}, Permanent("coinbase_commerce: body has no event.type")
	}
	spec := EventSpec{
		// event.id names the event; the outer id and attempt_number
		// describe one delivery of it.
		ProviderEventID: idString(event["id"]),
		// "charge:confirmed" → coinbase_commerce.charge.confirmed
		Type:       "coinbase_commerce." + typeSegment(strings.ReplaceAll(typ, ":", ".")),
		Kind:       intake.KindEvent,
		OccurredAt: unixTime(event["created_at"]),
	}
	// A charge has a UUID and a short code (the hosted page's); an app may
	// have kept either when it created the charge.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(event, "data", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(event, "data", "code"))
	// The data is the event as sent, without the delivery fields that
	// differ between attempts.
	var outer struct {
		Event json.RawMessage `json:"event"`
	}
	if err := json.NewDecoder(bytes.NewReader(r.Body)).Decode(&outer); err != nil {
		return Interpretation{}, Permanent("coinbase_commerce: %v", err)
	}
	spec.Data, spec.DataTruncated = eventData(outer.Event)
	return single(spec), nil
}

package provider

import (
	"crypto/sha1"
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// squareAdapter verifies Square webhooks: x-square-hmacsha256-signature is
// the base64 HMAC-SHA256 of the notification URL followed by the body,
// under the subscription's signature key
// (https://developer.squareup.com/docs/webhooks/step3validate). The URL is
// the public one Square was given. The legacy x-square-signature (HMAC-SHA1)
// counts only when the SHA-256 one is absent. Square signs no timestamp.
type squareAdapter struct{}

func init() { Register(squareAdapter{}) }

func (squareAdapter) Name() string { return "square" }

func (squareAdapter) ValidateConfig(Config) error { return nil }

func (squareAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if r.URL == "" {
		return sigError("square: the public URL is unknown")
	}
	h, header := sha256.New, headerValue(r.Header, "x-square-hmacsha256-signature")
	if header == "" {
		h, header = sha1.New, headerValue(r.Header, "x-square-signature")
	}
	if header == "" {
		return sigError("square: x-square-hmacsha256-signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("square: signature is not base64")
	}
	if anyKeySigned(h, secrets, [][]byte{sig}, []byte(r.URL), r.Body) {
		return nil
	}
	return sigError("square: no signature matches")
}

func (squareAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("square: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("square: body has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["event_id"]),
		Type:            "square." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/sha1"

	"github.com/intakehq/intake"
)

// vercelAdapter verifies Vercel webhooks: x-vercel-signature is the hex
// HMAC-SHA1 of the body under the webhook's secret (or the integration's
// client secret) (https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks).
// Vercel signs no timestamp.
type vercelAdapter struct{}

func init() { Register(vercelAdapter{}) }

func (vercelAdapter) Name() string { return "vercel" }

func (vercelAdapter) ValidateConfig(Config) error { return nil }

func (vercelAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "x-vercel-signature")
	if header == "" {
		return sigError("vercel: x-vercel-signature header missing")
	}
	if anyKeySigned(sha1.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("vercel: no signature matches")
}

func (vercelAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("vercel: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("vercel: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "vercel." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      msTime(m["createdAt"]),
	}
	for _, obj := range []string{"deployment", "project"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "payload", obj, "id")))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

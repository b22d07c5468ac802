package provider

import (
	"crypto/sha256"
	"strings"

	"github.com/intakehq/intake"
)

// typeformAdapter verifies Typeform webhooks: Typeform-Signature:
// sha256=<base64 HMAC-SHA256 of the body under the webhook's secret>
// (https://www.typeform.com/developers/webhooks/secure-your-webhooks/).
// Typeform signs no timestamp.
type typeformAdapter struct{}

func init() { Register(typeformAdapter{}) }

func (typeformAdapter) Name() string { return "typeform" }

func (typeformAdapter) ValidateConfig(Config) error { return nil }

func (typeformAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Typeform-Signature")
	if header == "" {
		return sigError("typeform: Typeform-Signature header missing")
	}
	b64, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return sigError("typeform: Typeform-Signature is not sha256=")
	}
	sig, err := decodeBase64Sig(b64)
	if err != nil {
		return sigError("typeform: Typeform-Signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("typeform: no signature matches")
}

func (typeformAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("typeform: body is not a JSON object: %v", err)
	}
	typ := str(m, "event_type")
	if typ == "" {
		return Interpretation{}, Permanent("typeform: body has no event_type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["event_id"]),
		Type:            "typeform." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(lookup(m, "form_response", "submitted_at")),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "form_response", "form_id"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "form_response", "token"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// circleciAdapter verifies CircleCI outbound webhooks: circleci-signature is
// a comma-separated list of versioned signatures, and v1 is the hex
// HMAC-SHA256 of the body under the webhook's secret token
// (https://circleci.com/docs/webhooks/#validate-webhooks). Only v1 counts,
// as CircleCI asks, so a request cannot fall back to a weaker version.
// CircleCI signs no timestamp.
type circleciAdapter struct{}

func init() { Register(circleciAdapter{}) }

func (circleciAdapter) Name() string { return "circleci" }

func (circleciAdapter) ValidateConfig(Config) error { return nil }

func (circleciAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "circleci-signature")
	if header == "" {
		return sigError("circleci: circleci-signature header missing")
	}
	sigs := decodeHexSigs(signatureParams(header, ",")["v1"]...)
	if len(sigs) == 0 {
		return sigError("circleci: no v1 signature in circleci-signature")
	}
	if anyKeySigned(sha256.New, secrets, sigs, r.Body) {
		return nil
	}
	return sigError("circleci: no signature matches")
}

func (circleciAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("circleci: body is not a JSON object: %v", err)
	}
	// The signed body's type first; circleci-event-type repeats it unsigned.
	typ := firstOf(str(m, "type"), headerValue(r.Header, "circleci-event-type"))
	if typ == "" {
		return Interpretation{}, Permanent("circleci: body has no type")
	}
	spec := EventSpec{
		// CircleCI names the event by id and asks receivers to deduplicate
		// on it: a retry repeats it.
		ProviderEventID: str(m, "id"),
		Type:            "circleci." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["happened_at"]),
	}
	for _, obj := range []string{"job", "workflow", "pipeline", "project"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, obj, "id"))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

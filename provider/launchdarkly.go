package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// launchdarklyAdapter verifies LaunchDarkly webhooks: X-LD-Signature is the
// hex HMAC-SHA256 of the body under the webhook's secret
// (https://docs.launchdarkly.com/home/connecting/webhooks). The body is
// an audit log entry. LaunchDarkly signs no timestamp.
type launchdarklyAdapter struct{}

func init() { Register(launchdarklyAdapter{}) }

func (launchdarklyAdapter) Name() string { return "launchdarkly" }

func (launchdarklyAdapter) ValidateConfig(Config) error { return nil }

func (launchdarklyAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-LD-Signature")
	if header == "" {
		return sigError("launchdarkly: X-LD-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("launchdarkly: no signature matches")
}

func (launchdarklyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("launchdarkly: body is not a JSON object: %v", err)
	}
	kind := str(m, "kind")
	if kind == "" {
		return Interpretation{}, Permanent("launchdarkly: body has no kind")
	}
	accesses := objects(m, "accesses")
	typ := "launchdarkly." + typeSegment(kind)
	// The first access is the change's own action ("updateOn",
	// "createFlag"); any others are in the data.
	if len(accesses) > 0 && str(accesses[0], "action") != "" {
		typ += "." + typeSegment(str(accesses[0], "action"))
	}
	spec := EventSpec{
		// The audit log entry's id: LaunchDarkly's one retry resends the
		// same entry.
		ProviderEventID: str(m, "_id"),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt:      msTime(m["date"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "_links", "canonical", "href"))
	for _, a := range accesses {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(a, "resource"))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/sha256"
	"strings"

	"github.com/intakehq/intake"
)

// pagerdutyAdapter verifies PagerDuty v3 webhooks: X-PagerDuty-Signature
// lists "v1=<hex HMAC-SHA256 of the body>" values, comma-separated, one per
// active secret (https://developer.pagerduty.com/docs/webhooks/webhook-signatures/).
// PagerDuty signs no timestamp.
type pagerdutyAdapter struct{}

func init() { Register(pagerdutyAdapter{}) }

func (pagerdutyAdapter) Name() string { return "pagerduty" }

func (pagerdutyAdapter) ValidateConfig(Config) error { return nil }

func (pagerdutyAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-PagerDuty-Signature")
	if header == "" {
		return sigError("pagerduty: X-PagerDuty-Signature header missing")
	}
	var sigs [][]byte
	for _, v := range strings.Split(header, ",") {
		if hexSig, ok := strings.CutPrefix(strings.TrimSpace(v), "v1="); ok {
			sigs = append(sigs, decodeHexSigs(hexSig)...)
		}
	}
	if len(sigs) == 0 {
		return sigError("pagerduty: no v1 signature in X-PagerDuty-Signature")
	}
	if anyKeySigned(sha256.New, secrets, sigs, r.Body) {
		return nil
	}
	return sigError("pagerduty: no signature matches")
}

func (pagerdutyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("pagerduty: body is not a JSON object: %v", err)
	}
	typ := str(m, "event", "event_type")
	if typ == "" {
		return Interpretation{}, Permanent("pagerduty: body has no event.event_type")
	}
	spec := EventSpec{
		ProviderEventID: idString(lookup(m, "event", "id")),
		Type:            "pagerduty." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(lookup(m, "event", "occurred_at")),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "event", "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

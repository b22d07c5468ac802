package provider

import (
	"crypto/sha1"
	"strings"

	"github.com/intakehq/intake"
)

// intercomAdapter verifies Intercom webhooks: X-Hub-Signature: sha1=<hex
// HMAC-SHA1 of the body under the app's client secret>
// (https://developers.intercom.com/docs/webhooks/webhook-notifications#signed-notifications).
// Intercom signs no timestamp.
type intercomAdapter struct{}

func init() { Register(intercomAdapter{}) }

func (intercomAdapter) Name() string { return "intercom" }

func (intercomAdapter) ValidateConfig(Config) error { return nil }

func (intercomAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Hub-Signature")
	if header == "" {
		return sigError("intercom: X-Hub-Signature header missing")
	}
	hexSig, ok := strings.CutPrefix(header, "sha1=")
	if !ok {
		return sigError("intercom: X-Hub-Signature is not sha1=")
	}
	if anyKeySigned(sha1.New, secrets, decodeHexSigs(hexSig), r.Body) {
		return nil
	}
	return sigError("intercom: no signature matches")
}

func (intercomAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("intercom: body is not a JSON object: %v", err)
	}
	topic := str(m, "topic")
	if topic == "" {
		return Interpretation{}, Permanent("intercom: notification has no topic")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]), // notif_…, the same on every attempt
		Type:            "intercom." + typeSegment(topic),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "item", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

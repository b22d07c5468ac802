package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// lineAdapter verifies LINE Messaging API webhooks
// (https://developers.line.biz/en/docs/messaging-api/verify-webhook-signature/):
// x-line-signature is the base64 HMAC-SHA256 of the body under the channel
// secret as written. LINE signs no timestamp. A delivery carries an events
// array, one event per item; the console's Verify button sends the array
// empty, which is a handshake that yields no events.
type lineAdapter struct{}

func init() { Register(lineAdapter{}) }

func (lineAdapter) Name() string { return "line" }

func (lineAdapter) ValidateConfig(Config) error { return nil }

func (lineAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Line-Signature")
	if header == "" {
		return sigError("line: x-line-signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("line: signature is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("line: no signature matches")
}

func (lineAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("line: body is not a JSON object: %v", err)
	}
	list, ok := m["events"].([]any)
	if !ok {
		return Interpretation{}, Permanent("line: body has no events array")
	}
	if len(list) == 0 {
		return Interpretation{EventType: "line.verification", Kind: intake.KindEvent, Challenge: true}, nil
	}
	specs := make([]EventSpec, 0, len(list))
	for i, v := range list {
		ev, ok := v.(map[string]any)
		if !ok {
			return Interpretation{}, Permanent("line: event %d is not an object", i)
		}
		typ := str(ev, "type")
		if typ == "" {
			return Interpretation{}, Permanent("line: event %d has no type", i)
		}
		spec := EventSpec{
			// webhookEventId stays the same when LINE redelivers the event.
			ProviderEventID: str(ev, "webhookEventId"),
			Type:            "line." + typeSegment(typ),
			Kind:            intake.KindEvent,
			OccurredAt:      msTime(ev["timestamp"]),
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = itemDigest("line:", ev)
		}
		for _, path := range [][]string{{"source", "userId"}, {"source", "groupId"}, {"source", "roomId"}, {"message", "id"}} {
			spec.ObjectIDs = appendID(spec.ObjectIDs, str(ev, path...))
		}
		spec.Data, spec.DataTruncated = itemData(ev)
		specs = append(specs, spec)
	}
	if len(specs) == 1 {
		return single(specs[0]), nil
	}
	return batch("line", "", specs), nil
}

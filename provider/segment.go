package provider

import (
	"bytes"
	"crypto/sha1"
	"errors"

	"github.com/intakehq/intake"
)

// segmentAdapter verifies Segment's Webhooks destination
// (https://segment.com/docs/connections/destinations/catalog/webhooks/):
// X-Signature is the hex HMAC-SHA1 of the body under the shared secret as
// written. Segment signs no timestamp. The body is one Segment call (track,
// identify, page, screen, group, alias), or with batching an array of them,
// one event per item; each is named by its messageId.
type segmentAdapter struct{}

func init() { Register(segmentAdapter{}) }

func (segmentAdapter) Name() string { return "segment" }

func (segmentAdapter) ValidateConfig(Config) error { return nil }

func (segmentAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Signature")
	if header == "" {
		return sigError("segment: X-Signature header missing")
	}
	if anyKeySigned(sha1.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("segment: no signature matches")
}

func (segmentAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if trimmed := bytes.TrimSpace(r.Body); len(trimmed) > 0 && trimmed[0] == '[' {
		items, err := decodeArray(r.Body)
		if err != nil {
			return Interpretation{}, Permanent("segment: body is not a JSON array of calls: %v", err)
		}
		specs := make([]EventSpec, 0, len(items))
		for i, item := range items {
			spec, err := segmentCall(item)
			if err != nil {
				return Interpretation{}, Permanent("segment: call %d: %v", i, err)
			}
			spec.Data, spec.DataTruncated = itemData(item)
			specs = append(specs, spec)
		}
		return batch("segment", "", specs), nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("segment: body is not a JSON object: %v", err)
	}
	spec, err := segmentCall(m)
	if err != nil {
		return Interpretation{}, Permanent("segment: %v", err)
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

func segmentCall(m map[string]any) (EventSpec, error) {
	typ := str(m, "type")
	if typ == "" {
		return EventSpec{}, errors.New("no type")
	}
	spec := EventSpec{
		// messageId is set once by the library that made the call and
		// kept on every retry.
		ProviderEventID: str(m, "messageId"),
		Type:            "segment." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["timestamp"]),
	}
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = itemDigest("segment:", m)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["userId"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["groupId"]))
	return spec, nil
}

package provider

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// boxAdapter verifies Box webhooks (V2): BOX-SIGNATURE-PRIMARY and
// BOX-SIGNATURE-SECONDARY are the base64 HMAC-SHA256 of the body followed by
// BOX-DELIVERY-TIMESTAMP, under the app's primary and secondary keys, and a
// delivery older than ten minutes is refused
// (https://developer.box.com/guides/webhooks/v2/signatures-v2/). Either key
// may be any of the connection's secrets.
type boxAdapter struct{}

func init() { Register(boxAdapter{}) }

// boxTolerance is Box's ten minutes; like Box's guide it bounds the age.
const boxTolerance = 10 * time.Minute

func (boxAdapter) Name() string { return "box" }

func (boxAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, boxTolerance)
	return err
}

func (boxAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, boxTolerance)
	if err != nil {
		return configError("box", err)
	}
	ts := headerValue(r.Header, "BOX-DELIVERY-TIMESTAMP")
	if ts == "" {
		return sigError("box: BOX-DELIVERY-TIMESTAMP header missing")
	}
	if v := headerValue(r.Header, "BOX-SIGNATURE-VERSION"); v != "" && v != "1" {
		return sigError("box: unknown signature version")
	}
	if alg := headerValue(r.Header, "BOX-SIGNATURE-ALGORITHM"); alg != "" && alg != "HmacSHA256" {
		return sigError("box: unknown signature algorithm")
	}
	var sigs [][]byte
	for _, name := range []string{"BOX-SIGNATURE-PRIMARY", "BOX-SIGNATURE-SECONDARY"} {
		if v := headerValue(r.Header, name); v != "" {
			if sig, err := decodeBase64Sig(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	if len(sigs) == 0 {
		return sigError("box: no BOX-SIGNATURE-PRIMARY or BOX-SIGNATURE-SECONDARY")
	}
	signedAt, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return sigError("box: BOX-DELIVERY-TIMESTAMP is not RFC 3339")
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, sigs, r.Body, []byte(ts)) {
		return nil
	}
	return sigError("box: no signature matches")
}

func (boxAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("box: body is not a JSON object: %v", err)
	}
	trigger := str(m, "trigger")
	if trigger == "" {
		return Interpretation{}, Permanent("box: body has no trigger")
	}
	spec := EventSpec{
		// BOX-DELIVERY-ID changes when Box retries; the body's id does not.
		ProviderEventID: idString(m["id"]),
		Type:            "box." + typeSegment(trigger),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "source", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

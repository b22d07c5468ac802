package provider

import (
	"time"

	"github.com/intakehq/intake"
)

// muxAdapter verifies Mux webhooks
// (https://docs.mux.com/core/verify-webhook-signatures): mux-signature is
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">" under the webhook's
// signing secret as written. Like @mux/mux-node, only the age of t is
// judged, five minutes by default.
type muxAdapter struct{}

func init() { Register(muxAdapter{}) }

// muxTolerance is @mux/mux-node's bound on a signature's age.
const muxTolerance = 300 * time.Second

func (muxAdapter) Name() string { return "mux" }

func (muxAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, muxTolerance)
	return err
}

func (muxAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, muxTolerance)
	if err != nil {
		return configError("mux", err)
	}
	header := headerValue(r.Header, "Mux-Signature")
	if header == "" {
		return sigError("mux: mux-signature header missing")
	}
	return verifyTimestampedHMAC("mux", []string{header}, "v1", r, secrets, tolerance, false)
}

func (muxAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("mux: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("mux: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "mux." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "object", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

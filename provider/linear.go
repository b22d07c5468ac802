package provider

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// linearAdapter verifies Linear webhooks: Linear-Signature is the hex
// HMAC-SHA256 of the body, and the body's webhookTimestamp (unix ms) must
// be within a minute of receipt, either way
// (https://linear.app/developers/webhooks#securing-webhooks).
type linearAdapter struct{}

func init() { Register(linearAdapter{}) }

// linearTolerance is the minute Linear's docs and SDK allow.
const linearTolerance = time.Minute

func (linearAdapter) Name() string { return "linear" }

func (linearAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, linearTolerance)
	return err
}

func (linearAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, linearTolerance)
	if err != nil {
		return configError("linear", err)
	}
	header := headerValue(r.Header, "Linear-Signature")
	if header == "" {
		return sigError("linear: Linear-Signature header missing")
	}
	if !anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return sigError("linear: no signature matches")
	}
	// The timestamp is inside the signed body.
	m, err := decodeObject(r.Body)
	if err != nil {
		return sigError("linear: signed body is not a JSON object")
	}
	signedAt := msTime(m["webhookTimestamp"])
	if signedAt.IsZero() {
		return sigError("linear: body has no webhookTimestamp")
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, true); err != nil {
		return fmt.Errorf("linear: %w", err)
	}
	return nil
}

func (linearAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("linear: body is not a JSON object: %v", err)
	}
	typ, action := str(m, "type"), str(m, "action")
	if typ == "" {
		return Interpretation{}, Permanent("linear: body has no type")
	}
	spec := EventSpec{
		Type:       "linear." + typeSegment(typ),
		Kind:       intake.KindEvent,
		OccurredAt: unixTime(m["createdAt"]),
	}
	if action != "" {
		spec.Type += "." + typeSegment(action)
	}
	// Each delivery carries a fresh webhookTimestamp, so the body differs on
	// a retry; the entity, action and time of the change do not.
	spec.ProviderEventID = joinID(typ, action, idString(lookup(m, "data", "id")), str(m, "createdAt"))
	if spec.ProviderEventID == "" {
		spec.ProviderEventID = headerValue(r.Header, "Linear-Delivery")
	}
	for _, f := range []string{"id", "identifier", "issueId"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", f)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

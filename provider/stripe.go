package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// stripeAdapter verifies Stripe's Stripe-Signature scheme
// (https://docs.stripe.com/webhooks#verify-manually) and reads Stripe event
// objects, both snapshot and thin.
type stripeAdapter struct{}

func init() { Register(stripeAdapter{}) }

// stripeTolerance is the default tolerance of Stripe's own libraries.
const stripeTolerance = 300 * time.Second

func (stripeAdapter) Name() string { return "stripe" }

func (stripeAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, stripeTolerance)
	return err
}

func (stripeAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, stripeTolerance)
	if err != nil {
		return configError("stripe", err)
	}
	header := headerValue(r.Header, "Stripe-Signature")
	if header == "" {
		return sigError("stripe: Stripe-Signature header missing")
	}
	ts, sigs, ok := parseStripeSignature(header)
	if !ok {
		return sigError("stripe: Stripe-Signature header malformed")
	}
	if len(sigs) == 0 {
		return sigError("stripe: no v1 signature in Stripe-Signature")
	}
	signedAt, err := parseUnixSeconds(ts)
	if err != nil {
		return fmt.Errorf("stripe: %w", err)
	}
	// Stripe's libraries judge only the age: a time ahead of receipt is
	// clock skew, and only the secret's holder could have signed it.
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("stripe: %w", err)
	}
	// The whsec_ secret is the key as written, not decoded.
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts), []byte("."), r.Body) {
		return nil
	}
	return sigError("stripe: no signature matches")
}

// parseStripeSignature reads "t=<unix>,v1=<hex>,v1=<hex>,v0=<hex>": exactly
// one timestamp, and every v1 signature that decodes (others are ignored).
func parseStripeSignature(header string) (ts string, v1 [][]byte, ok bool) {
	for _, item := range strings.Split(header, ",") {
		k, v, found := strings.Cut(item, "=")
		if !found {
			continue
		}
		switch k {
		case "t":
			if ts != "" || v == "" {
				return "", nil, false
			}
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				v1 = append(v1, sig)
			}
		}
	}
	return ts, v1, ts != ""
}

func (stripeAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("stripe: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("stripe: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "stripe." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created"]), // unix seconds; RFC 3339 in thin events
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "object", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "related_object", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

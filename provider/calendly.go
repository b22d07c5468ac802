package provider

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// calendlyAdapter verifies Calendly webhooks: Calendly-Webhook-Signature:
// t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>"> under the webhook signing
// key (https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures).
type calendlyAdapter struct{}

func init() { Register(calendlyAdapter{}) }

// calendlyTolerance is the three minutes of Calendly's published example;
// like it, only the age is bounded.
const calendlyTolerance = 3 * time.Minute

func (calendlyAdapter) Name() string { return "calendly" }

func (calendlyAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, calendlyTolerance)
	return err
}

func (calendlyAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, calendlyTolerance)
	if err != nil {
		return configError("calendly", err)
	}
	header := headerValue(r.Header, "Calendly-Webhook-Signature")
	if header == "" {
		return sigError("calendly: Calendly-Webhook-Signature header missing")
	}
	params := signatureParams(header, ",")
	ts := oneParam(params, "t")
	if ts == "" {
		return sigError("calendly: Calendly-Webhook-Signature needs exactly one t")
	}
	sigs := decodeHexSigs(params["v1"]...)
	if len(sigs) == 0 {
		return sigError("calendly: no v1 signature in Calendly-Webhook-Signature")
	}
	signedAt, err := parseUnixSeconds(ts)
	if err != nil {
		return fmt.Errorf("calendly: %w", err)
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("calendly: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts+"."), r.Body) {
		return nil
	}
	return sigError("calendly: no signature matches")
}

func (calendlyAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("calendly: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("calendly: body has no event")
	}
	spec := EventSpec{
		// Calendly sends no event id: the event, the resource it is about
		// and when it happened name it.
		ProviderEventID: joinID(event, str(m, "payload", "uri"), str(m, "created_at")),
		Type:            "calendly." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "payload", "uri"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, firstOf(str(m, "payload", "scheduled_event", "uri"), str(m, "payload", "event")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

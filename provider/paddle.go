package provider

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// paddleAdapter verifies Paddle Billing notifications: Paddle-Signature:
// ts=<unix>;h1=<hex HMAC-SHA256 of "<ts>:<body>"> under the notification
// destination's secret key, used whole (pdl_ntfset_…)
// (https://developer.paddle.com/webhooks/signature-verification).
type paddleAdapter struct{}

func init() { Register(paddleAdapter{}) }

// paddleTolerance is the five seconds Paddle's own SDK allows
// (paddle-node-sdk, WebhooksValidator.MAX_VALID_TIME_DIFFERENCE); it bounds
// only the age, judged against the received time.
const paddleTolerance = 5 * time.Second

func (paddleAdapter) Name() string { return "paddle" }

func (paddleAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, paddleTolerance)
	return err
}

func (paddleAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, paddleTolerance)
	if err != nil {
		return configError("paddle", err)
	}
	header := headerValue(r.Header, "Paddle-Signature")
	if header == "" {
		return sigError("paddle: Paddle-Signature header missing")
	}
	params := signatureParams(header, ";")
	ts := oneParam(params, "ts")
	if ts == "" {
		return sigError("paddle: Paddle-Signature needs exactly one ts")
	}
	sigs := decodeHexSigs(params["h1"]...)
	if len(sigs) == 0 {
		return sigError("paddle: no h1 signature in Paddle-Signature")
	}
	sec, err := parseUnixSeconds(ts)
	if err != nil {
		return fmt.Errorf("paddle: %w", err)
	}
	if err := checkTime(sec, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("paddle: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts+":"), r.Body) {
		return nil
	}
	return sigError("paddle: no signature matches")
}

func (paddleAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("paddle: body is not a JSON object: %v", err)
	}
	typ := str(m, "event_type")
	if typ == "" {
		return Interpretation{}, Permanent("paddle: body has no event_type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["event_id"]),
		Type:            "paddle." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["occurred_at"]),
	}
	for _, f := range []string{"id", "subscription_id", "transaction_id", "customer_id"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", f)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

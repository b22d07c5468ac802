package provider

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// workosAdapter verifies WorkOS webhooks: WorkOS-Signature: "t=<unix ms>,
// v1=<hex HMAC-SHA256 of "<t>.<body>">" under the endpoint's secret
// (https://workos.com/docs/events/data-syncing/webhooks).
type workosAdapter struct{}

func init() { Register(workosAdapter{}) }

// workosTolerance is the three minutes of WorkOS's SDKs (workos-node
// SignatureProvider, workos-go webhooks); like them it bounds only the age.
const workosTolerance = 180 * time.Second

func (workosAdapter) Name() string { return "workos" }

func (workosAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, workosTolerance)
	return err
}

func (workosAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, workosTolerance)
	if err != nil {
		return configError("workos", err)
	}
	header := headerValue(r.Header, "WorkOS-Signature")
	if header == "" {
		return sigError("workos: WorkOS-Signature header missing")
	}
	params := signatureParams(header, ",")
	ts := oneParam(params, "t")
	if ts == "" {
		return sigError("workos: WorkOS-Signature needs exactly one t")
	}
	sigs := decodeHexSigs(params["v1"]...)
	if len(sigs) == 0 {
		return sigError("workos: no v1 signature in WorkOS-Signature")
	}
	signedAt, err := unixMillis(ts)
	if err != nil {
		return fmt.Errorf("workos: %w", err)
	}
	if err := checkTime(signedAt, r.ReceivedAt, tolerance, false); err != nil {
		return fmt.Errorf("workos: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts+"."), r.Body) {
		return nil
	}
	return sigError("workos: no signature matches")
}

func (workosAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("workos: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("workos: body has no event")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "workos." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// buildkiteAdapter verifies Buildkite webhooks in either form a webhook's
// Token may take (https://buildkite.com/docs/apis/webhooks/pipelines):
//
//   - X-Buildkite-Signature: timestamp=<unix>,signature=<hex HMAC-SHA256 of
//     "<timestamp>.<body>" under the token>; the timestamp must lie within
//     tolerance of receipt, either way (Buildkite's docs: "within a short
//     window (for example, 5 minutes)" of the current time);
//   - X-Buildkite-Token: the token itself, compared as written.
//
// Config require_signature: true refuses the plain token, which proves less
// (it is the secret itself, and no time).
type buildkiteAdapter struct{}

func init() { Register(buildkiteAdapter{}) }

func (buildkiteAdapter) Name() string { return "buildkite" }

func (buildkiteAdapter) ValidateConfig(cfg Config) error {
	if _, err := toleranceSetting(cfg, defaultTolerance); err != nil {
		return err
	}
	_, err := boolSetting(cfg, "require_signature")
	return err
}

func (buildkiteAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("buildkite", err)
	}
	requireSignature, err := boolSetting(cfg, "require_signature")
	if err != nil {
		return configError("buildkite", err)
	}
	if header := headerValue(r.Header, "X-Buildkite-Signature"); header != "" {
		return verifyBuildkiteSignature(r, header, secrets, tolerance)
	}
	if requireSignature {
		return sigError("buildkite: X-Buildkite-Signature header missing")
	}
	token := headerValue(r.Header, "X-Buildkite-Token")
	if token == "" {
		return sigError("buildkite: neither X-Buildkite-Signature nor X-Buildkite-Token")
	}
	if anySecretEquals(secrets, token) {
		return nil
	}
	return sigError("buildkite: X-Buildkite-Token matches no secret")
}

func verifyBuildkiteSignature(r *Request, header string, secrets [][]byte, tolerance time.Duration) error {
	params := signatureParams(header, ",")
	ts := oneParam(params, "timestamp")
	if ts == "" {
		return sigError("buildkite: X-Buildkite-Signature needs exactly one timestamp")
	}
	sigs := decodeHexSigs(params["signature"]...)
	if len(sigs) == 0 {
		return sigError("buildkite: no signature in X-Buildkite-Signature")
	}
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return fmt.Errorf("buildkite: %w", err)
	}
	if anyKeySigned(sha256.New, secrets, sigs, []byte(ts+"."), r.Body) {
		return nil
	}
	return sigError("buildkite: no signature matches")
}

func (buildkiteAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("buildkite: body is not a JSON object: %v", err)
	}
	// The signed body's event first; X-Buildkite-Event repeats it unsigned.
	event := firstOf(str(m, "event"), headerValue(r.Header, "X-Buildkite-Event"))
	if event == "" {
		return Interpretation{}, Permanent("buildkite: body has no event")
	}
	spec := EventSpec{Type: "buildkite." + typeSegment(event), Kind: intake.KindEvent}
	// Buildkite sends no event id. A job passes through each state once (a
	// retried job is a new job), so a job event is named by its job. A
	// build can finish blocked and later run and finish again, and Buildkite
	// may send an object's later state, so build, agent and ping events have
	// nothing that names one occurrence: they are deduplicated by body digest.
	if strings.HasPrefix(event, "job.") {
		spec.ProviderEventID = joinID(event, str(m, "job", "id"))
	}
	for _, obj := range []string{"job", "build", "agent", "pipeline"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, obj, "id"))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"fmt"
	"strings"

	"github.com/intakehq/intake"
)

// gitlabAdapter verifies GitLab webhooks
// (https://docs.gitlab.com/user/project/integrations/webhooks/) in either of
// its two ways:
//
//   - a signing token (whsec_<base64>): GitLab signs as Standard Webhooks do,
//     webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">;
//   - a secret token: GitLab sends it as written in X-Gitlab-Token.
//
// A connection's secrets starting whsec_ are signing tokens, the others
// secret tokens. Once a connection holds a signing token, only a signature
// counts: a token in a header is the weaker proof.
type gitlabAdapter struct{}

func init() { Register(gitlabAdapter{}) }

func (gitlabAdapter) Name() string { return "gitlab" }

func (gitlabAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (gitlabAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("gitlab", err)
	}
	var signing, tokens [][]byte
	for _, s := range secrets {
		if strings.HasPrefix(string(s), standardSecretPrefix) {
			signing = append(signing, s)
		} else {
			tokens = append(tokens, s)
		}
	}
	if len(signing) > 0 {
		if err := verifyStandard(r, signing, tolerance, false); err != nil {
			return fmt.Errorf("gitlab: %w", err)
		}
		return nil
	}
	token := headerValue(r.Header, "X-Gitlab-Token")
	if token == "" {
		return sigError("gitlab: X-Gitlab-Token header missing")
	}
	if anySecretEquals(tokens, token) {
		return nil
	}
	return sigError("gitlab: X-Gitlab-Token matches no secret token")
}

func (gitlabAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("gitlab: body is not a JSON object: %v", err)
	}
	// Project and group hooks name the kind in object_kind, system hooks in
	// event_name; X-Gitlab-Event ("Push Hook") is the last resort.
	kind := firstOf(str(m, "object_kind"), str(m, "event_name"),
		strings.ToLower(strings.ReplaceAll(strings.TrimSuffix(headerValue(r.Header, "X-Gitlab-Event"), " Hook"), " ", "_")))
	if kind == "" {
		return Interpretation{}, Permanent("gitlab: delivery names no event")
	}
	spec := EventSpec{
		// Idempotency-Key (the webhook-id of signed deliveries) stays the
		// same when GitLab retries.
		ProviderEventID: headerValue(r.Header, "Idempotency-Key", "webhook-id", "X-Gitlab-Event-UUID"),
		Type:            "gitlab." + typeSegment(kind),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(lookup(m, "object_attributes", "updated_at")),
	}
	if action := str(m, "object_attributes", "action"); action != "" {
		spec.Type += "." + typeSegment(action)
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "project", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "object_attributes", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

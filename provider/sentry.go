package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// sentryAdapter verifies Sentry integration-platform webhooks:
// Sentry-Hook-Signature is the hex HMAC-SHA256 of the body under the
// integration's client secret
// (https://docs.sentry.io/integrations/integration-platform/webhooks/;
// getsentry/sentry, SentryApp.build_signature). Sentry-Hook-Timestamp is not
// part of what is signed, so it proves nothing and is not judged.
type sentryAdapter struct{}

func init() { Register(sentryAdapter{}) }

func (sentryAdapter) Name() string { return "sentry" }

func (sentryAdapter) ValidateConfig(Config) error { return nil }

func (sentryAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Sentry-Hook-Signature")
	if header == "" {
		return sigError("sentry: Sentry-Hook-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("sentry: no signature matches")
}

func (sentryAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	resource := headerValue(r.Header, "Sentry-Hook-Resource")
	if resource == "" {
		return Interpretation{}, Permanent("sentry: Sentry-Hook-Resource header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("sentry: body is not a JSON object: %v", err)
	}
	action := str(m, "action")
	typ := "sentry." + typeSegment(resource)
	if action != "" {
		typ += "." + typeSegment(action)
	}
	spec := EventSpec{
		ProviderEventID: sentryEventID(resource, action, m),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt: firstTime(unixTime(lookup(m, "data", "error", "datetime")),
			unixTime(lookup(m, "data", "event", "datetime")), unixTime(lookup(m, "data", "timestamp"))),
	}
	for _, path := range [][]string{
		{"data", "issue", "id"}, {"data", "error", "issue_id"}, {"data", "event", "issue_id"},
		{"data", "issue_id"}, {"data", "metric_alert", "id"}, {"data", "installation", "uuid"},
	} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, path...)))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// sentryEventID names an event that happens once per object by that object.
// Sentry sends no event id, and its Request-ID is minted afresh for every
// attempt, so only the body can name a retried event. Events that can recur
// for one object (an issue resolved twice, a metric alert going critical
// again, a comment edited) get none and are deduplicated by body digest.
func sentryEventID(resource, action string, m map[string]any) string {
	switch resource + "." + action {
	case "installation.created", "installation.deleted":
		return joinID(resource, action, str(m, "data", "installation", "uuid"))
	case "issue.created":
		return joinID(resource, action, idString(lookup(m, "data", "issue", "id")))
	case "error.created":
		return joinID(resource, action, str(m, "data", "error", "event_id"))
	case "comment.created", "comment.deleted":
		return joinID(resource, action, idString(lookup(m, "data", "comment_id")))
	case "event_alert.triggered":
		// One error event fires each alert rule once.
		return joinID(resource, action, str(m, "data", "event", "event_id"), str(m, "data", "triggered_rule"))
	}
	return ""
}

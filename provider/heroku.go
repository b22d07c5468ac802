package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// herokuAdapter verifies Heroku app webhooks: Heroku-Webhook-Hmac-SHA256 is
// the base64 HMAC-SHA256 of the body under the webhook's secret
// (https://devcenter.heroku.com/articles/app-webhooks). Heroku signs no
// timestamp.
type herokuAdapter struct{}

func init() { Register(herokuAdapter{}) }

func (herokuAdapter) Name() string { return "heroku" }

func (herokuAdapter) ValidateConfig(Config) error { return nil }

func (herokuAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "Heroku-Webhook-Hmac-SHA256")
	if header == "" {
		return sigError("heroku: Heroku-Webhook-Hmac-SHA256 header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("heroku: Heroku-Webhook-Hmac-SHA256 is not base64")
	}
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("heroku: no signature matches")
}

func (herokuAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("heroku: body is not a JSON object: %v", err)
	}
	// The body names the entity without its api: prefix ("release" for the
	// api:release subscription) and the action (create, update, destroy).
	resource, action := str(m, "resource"), str(m, "action")
	if resource == "" || action == "" {
		return Interpretation{}, Permanent("heroku: body lacks resource or action")
	}
	spec := EventSpec{
		// The event's id; a sync-level webhook's retries resend the same
		// event under a new webhook_metadata.attempt.id.
		ProviderEventID: str(m, "id"),
		Type:            "heroku." + typeSegment(resource) + "." + typeSegment(action),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["created_at"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "data", "app", "id"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

package provider

import (
	"crypto/md5"
	"strings"

	"github.com/intakehq/intake"
)

// patreonAdapter verifies Patreon webhooks
// (https://docs.patreon.com/#webhooks): X-Patreon-Signature is the hex
// HMAC-MD5 of the body under the webhook's secret as written, and
// X-Patreon-Event names the trigger (members:pledge:create, posts:publish,
// …), whose colons become dots. Patreon signs no timestamp and sends no
// event id; a retry sends the same trigger and body, so the id is built
// from the two.
type patreonAdapter struct{}

func init() { Register(patreonAdapter{}) }

func (patreonAdapter) Name() string { return "patreon" }

func (patreonAdapter) ValidateConfig(Config) error { return nil }

func (patreonAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Patreon-Signature")
	if header == "" {
		return sigError("patreon: X-Patreon-Signature header missing")
	}
	if anyKeySigned(md5.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("patreon: no signature matches")
}

func (patreonAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	event := headerValue(r.Header, "X-Patreon-Event")
	if event == "" {
		return Interpretation{}, Permanent("patreon: X-Patreon-Event header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("patreon: body is not a JSON object: %v", err)
	}
	spec := EventSpec{
		ProviderEventID: itemDigest("patreon:", map[string]any{"event": event, "body": m}),
		Type:            "patreon." + typeSegment(strings.ReplaceAll(event, ":", ".")),
		Kind:            intake.KindEvent,
	}
	// The member (or post) and, through its relationships, the patron and
	// the campaign.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "id")))
	for _, rel := range []string{"user", "campaign"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "relationships", rel, "data", "id")))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

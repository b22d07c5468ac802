package provider

import (
	"crypto/sha1"

	"github.com/intakehq/intake"
)

// helpscoutAdapter verifies Help Scout webhooks
// (https://developer.helpscout.com/webhooks/): X-HelpScout-Signature is the
// base64 HMAC-SHA1 of the body under the webhook's secret key as written,
// and X-HelpScout-Event names the event (convo.assigned, customer.created,
// …). Help Scout signs no timestamp and sends no event id; a retry sends the
// same event and body, so the id is built from the two.
type helpscoutAdapter struct{}

func init() { Register(helpscoutAdapter{}) }

func (helpscoutAdapter) Name() string { return "helpscout" }

func (helpscoutAdapter) ValidateConfig(Config) error { return nil }

func (helpscoutAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-HelpScout-Signature")
	if header == "" {
		return sigError("helpscout: X-HelpScout-Signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("helpscout: signature is not base64")
	}
	if anyKeySigned(sha1.New, secrets, [][]byte{sig}, r.Body) {
		return nil
	}
	return sigError("helpscout: no signature matches")
}

func (helpscoutAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	event := headerValue(r.Header, "X-HelpScout-Event")
	if event == "" {
		return Interpretation{}, Permanent("helpscout: X-HelpScout-Event header missing")
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("helpscout: body is not a JSON object: %v", err)
	}
	spec := EventSpec{
		ProviderEventID: itemDigest("helpscout:", map[string]any{"event": event, "body": m}),
		Type:            "helpscout." + typeSegment(event),
		Kind:            intake.KindEvent,
	}
	// A conversation is known by its id and by the number agents see.
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["id"]))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m["number"]))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

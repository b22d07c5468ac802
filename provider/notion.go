package provider

import (
	"crypto/sha256"
	"strings"

	"github.com/intakehq/intake"
)

// notionAdapter verifies Notion integration webhooks: X-Notion-Signature:
// sha256=<hex HMAC-SHA256 of the body under the verification_token>
// (https://developers.notion.com/reference/webhooks). When a subscription is
// created Notion posts the verification_token itself, unsigned; that
// request is recorded as a handshake, and the operator pastes the token both
// into Notion and into the connection's secrets. Notion signs no timestamp.
type notionAdapter struct{}

func init() { Register(notionAdapter{}) }

func (notionAdapter) Name() string { return "notion" }

func (notionAdapter) ValidateConfig(Config) error { return nil }

// notionVerification reports whether r is the unsigned one-time request
// that carries the verification_token.
func notionVerification(r *Request) bool {
	if headerValue(r.Header, "X-Notion-Signature") != "" {
		return false
	}
	m, err := decodeObject(r.Body)
	return err == nil && len(m) == 1 && str(m, "verification_token") != ""
}

func (notionAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if notionVerification(r) {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-Notion-Signature")
	if header == "" {
		return sigError("notion: X-Notion-Signature header missing")
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return sigError("notion: X-Notion-Signature is not sha256=")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(hexSig), r.Body) {
		return nil
	}
	return sigError("notion: no signature matches")
}

func (notionAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if notionVerification(r) {
		return Interpretation{EventType: "notion.verification", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("notion: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	if typ == "" {
		return Interpretation{}, Permanent("notion: event has no type")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "notion." + typeSegment(typ),
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["timestamp"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "entity", "id")))
	spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(m, "data", "parent", "id")))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

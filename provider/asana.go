package provider

import (
	"crypto/sha256"
	"net/http"

	"github.com/intakehq/intake"
)

// asanaAdapter verifies Asana webhooks (https://developers.asana.com/docs/webhooks-guide).
// Creating a webhook sends a handshake carrying X-Hook-Secret, which must be
// echoed back in the same header; that value is then the secret: every
// later delivery carries X-Hook-Signature, the hex HMAC-SHA256 of the body
// under it. The operator copies it from the recorded handshake into the
// connection's secrets. Deliveries batch events, and carry none as a
// heartbeat. Asana signs no timestamp.
type asanaAdapter struct{}

func init() { Register(asanaAdapter{}) }

func (asanaAdapter) Name() string { return "asana" }

func (asanaAdapter) ValidateConfig(Config) error { return nil }

// asanaHandshake is the handshake's X-Hook-Secret, "" for deliveries.
func asanaHandshake(r *Request) string {
	if headerValue(r.Header, "X-Hook-Signature") != "" {
		return ""
	}
	return headerValue(r.Header, "X-Hook-Secret")
}

// HandshakeSecret is the handshake's X-Hook-Secret: the secret Asana signs
// that webhook's deliveries with.
func (asanaAdapter) HandshakeSecret(r *Request) string { return asanaHandshake(r) }

// Challenge echoes X-Hook-Secret, with 200 and no body.
func (asanaAdapter) Challenge(r *Request, _ [][]byte, _ Config) (Challenge, bool) {
	secret := asanaHandshake(r)
	if secret == "" {
		return Challenge{}, false
	}
	return Challenge{Status: http.StatusOK, Header: http.Header{"X-Hook-Secret": {secret}}}, true
}

func (asanaAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	if asanaHandshake(r) != "" {
		return nil // a handshake: it yields no events
	}
	header := headerValue(r.Header, "X-Hook-Signature")
	if header == "" {
		return sigError("asana: X-Hook-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("asana: no signature matches")
}

func (asanaAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if asanaHandshake(r) != "" {
		return Interpretation{EventType: "asana.handshake", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("asana: body is not a JSON object: %v", err)
	}
	var specs []EventSpec
	for _, item := range objects(m, "events") {
		resource, action := str(item, "resource", "resource_type"), str(item, "action")
		if resource == "" || action == "" {
			continue
		}
		spec := EventSpec{
			// Asana's events carry no id; this is the item's own identity.
			ProviderEventID: asanaEventID(item),
			Type:            "asana." + typeSegment(resource) + "." + typeSegment(action),
			Kind:            intake.KindEvent,
			OccurredAt:      unixTime(item["created_at"]),
		}
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "resource", "gid"))
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(item, "parent", "gid"))
		spec.Data, spec.DataTruncated = itemData(item)
		specs = append(specs, spec)
	}
	return batch("asana", "", specs), nil
}

// asanaEventID builds an event's id from the fields that identify it: what
// changed, how, when, which field, and under which parent and user.
func asanaEventID(item map[string]any) string {
	id := joinID(str(item, "resource", "gid"), str(item, "action"), str(item, "created_at"))
	if id == "" {
		return itemDigest("asana:", item)
	}
	for _, extra := range []string{str(item, "change", "field"), str(item, "parent", "gid"), str(item, "user", "gid")} {
		id += ":" + extra
	}
	return id
}

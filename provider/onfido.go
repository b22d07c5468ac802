package provider

import (
	"crypto/sha256"
	"strings"

	"github.com/intakehq/intake"
)

// onfidoAdapter verifies Onfido webhooks
// (https://documentation.onfido.com/api/latest/#webhooks): X-SHA2-Signature
// is the hex HMAC-SHA256 of the body under the webhook's token as written.
// Onfido signs no timestamp and sends no event id; the id is built from the
// action, the object and the object's status and time, which a retry
// repeats.
type onfidoAdapter struct{}

func init() { Register(onfidoAdapter{}) }

func (onfidoAdapter) Name() string { return "onfido" }

func (onfidoAdapter) ValidateConfig(Config) error { return nil }

func (onfidoAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-SHA2-Signature")
	if header == "" {
		return sigError("onfido: X-SHA2-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("onfido: no signature matches")
}

// onfidoTimes are the object's time fields, one per kind of action.
var onfidoTimes = []string{"completed_at_iso8601", "started_at_iso8601", "created_at_iso8601", "updated_at_iso8601"}

func (onfidoAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("onfido: body is not a JSON object: %v", err)
	}
	action := str(m, "payload", "action")
	if action == "" {
		return Interpretation{}, Permanent("onfido: payload has no action")
	}
	obj, _ := lookup(m, "payload", "object").(map[string]any)
	objectID := idString(obj["id"])
	at := ""
	for _, f := range onfidoTimes {
		if at = str(obj, f); at != "" {
			break
		}
	}
	spec := EventSpec{
		Type:       "onfido." + typeSegment(action),
		Kind:       intake.KindEvent,
		OccurredAt: unixTime(at),
	}
	if objectID != "" {
		parts := []string{action, objectID}
		for _, p := range []string{str(obj, "status"), at} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		spec.ProviderEventID = strings.Join(parts, ":")
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, objectID)
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(obj, "workflow_run_id"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

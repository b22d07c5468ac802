package provider

import (
	"crypto/sha256"

	"github.com/intakehq/intake"
)

// clickupAdapter verifies ClickUp webhooks: X-Signature is the hex
// HMAC-SHA256 of the body under the secret returned when the webhook was
// created (https://developer.clickup.com/docs/webhooksignature). ClickUp
// signs no timestamp.
type clickupAdapter struct{}

func init() { Register(clickupAdapter{}) }

func (clickupAdapter) Name() string { return "clickup" }

func (clickupAdapter) ValidateConfig(Config) error { return nil }

func (clickupAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Signature")
	if header == "" {
		return sigError("clickup: X-Signature header missing")
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(header), r.Body) {
		return nil
	}
	return sigError("clickup: no signature matches")
}

func (clickupAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("clickup: body is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("clickup: body has no event")
	}
	history := objects(m, "history_items")
	var first map[string]any
	if len(history) > 0 {
		first = history[0]
	}
	spec := EventSpec{
		// ClickUp sends no event id. A history item's id names the change
		// and is the same in a retry; without one (taskDeleted) the body,
		// unchanged in a retry, is deduplicated by its digest.
		ProviderEventID: joinID(event, idString(first["id"])),
		Type:            "clickup." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      msTime(first["date"]),
	}
	for _, f := range []string{"task_id", "list_id", "folder_id", "space_id", "goal_id", "key_result_id"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(m[f]))
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

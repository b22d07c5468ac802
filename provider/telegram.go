package provider

import (
	"encoding/json"
	"sort"

	"github.com/intakehq/intake"
)

// telegramAdapter verifies Telegram Bot API updates
// (https://core.telegram.org/bots/api#setwebhook): the secret_token given
// to setWebhook comes back in X-Telegram-Bot-Api-Secret-Token, compared
// with each secret in constant time. Telegram signs nothing and sends no
// timestamp; an update is one event, typed by its kind (message,
// edited_message, callback_query, …) and named by update_id.
type telegramAdapter struct{}

func init() { Register(telegramAdapter{}) }

func (telegramAdapter) Name() string { return "telegram" }

func (telegramAdapter) ValidateConfig(Config) error { return nil }

func (telegramAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	token := headerValue(r.Header, "X-Telegram-Bot-Api-Secret-Token")
	if token == "" {
		return sigError("telegram: X-Telegram-Bot-Api-Secret-Token header missing")
	}
	if anySecretEquals(secrets, token) {
		return nil
	}
	return sigError("telegram: the secret token matches no secret")
}

func (telegramAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("telegram: body is not a JSON object: %v", err)
	}
	id, ok := m["update_id"].(json.Number)
	if !ok {
		return Interpretation{}, Permanent("telegram: update has no update_id")
	}
	kind := telegramKind(m)
	if kind == "" {
		return Interpretation{}, Permanent("telegram: update has no kind")
	}
	obj, _ := m[kind].(map[string]any)
	spec := EventSpec{
		ProviderEventID: id.String(),
		Type:            "telegram." + typeSegment(kind),
		Kind:            intake.KindEvent,
		OccurredAt:      firstTime(unixTime(obj["edit_date"]), unixTime(obj["date"]), unixTime(lookup(obj, "message", "date"))),
	}
	// A message is named "<chat id>:<message_id>", as the Bot API addresses
	// it; a callback query by its own id.
	msg := obj
	if _, isMessage := obj["message_id"]; !isMessage {
		msg, _ = obj["message"].(map[string]any)
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(obj["id"]))
	}
	if chat := idString(lookup(msg, "chat", "id")); chat != "" {
		spec.ObjectIDs = appendID(spec.ObjectIDs, chat)
		if mid := idString(msg["message_id"]); mid != "" {
			spec.ObjectIDs = appendID(spec.ObjectIDs, chat+":"+mid)
		}
	}
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// telegramKind is the update's one optional field: the first (by name) of
// its object-valued keys, so a kind added to the Bot API later is typed
// without a change here.
func telegramKind(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if _, ok := v.(map[string]any); ok && k != "update_id" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return keys[0]
}

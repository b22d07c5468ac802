package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// metaAdapter verifies Meta Graph API webhooks, which Facebook pages,
// Messenger, Instagram and WhatsApp Cloud API all send
// (https://developers.facebook.com/docs/graph-api/webhooks/getting-started).
// Subscribing sends a GET with hub.mode=subscribe, hub.verify_token and
// hub.challenge: when hub.verify_token equals config verify_token the
// challenge is echoed, otherwise 403. Notifications carry
// X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body under the app
// secret>. A notification batches entries, each with changes or messaging
// items; each item becomes one event (each WhatsApp message and status
// too). The meta, whatsapp and instagram codes differ only in the prefix
// of their event types. Meta signs no time.
type metaAdapter struct{ name string }

func init() {
	Register(metaAdapter{name: "meta"})
	Register(metaAdapter{name: "whatsapp"})
	Register(metaAdapter{name: "instagram"})
}

func (a metaAdapter) Name() string { return a.name }

func (metaAdapter) ValidateConfig(cfg Config) error {
	_, err := stringSetting(cfg, "verify_token")
	return err
}

// metaHandshake reports whether r is the subscription handshake, and
// whether its verify token is the configured one.
func metaHandshake(r *Request, cfg Config) (handshake, tokenOK bool) {
	if r.Method != http.MethodGet || r.Query.Get("hub.mode") != "subscribe" || r.Query.Get("hub.challenge") == "" {
		return false, false
	}
	want, err := stringSetting(cfg, "verify_token")
	got := r.Query.Get("hub.verify_token")
	return true, err == nil && want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// Challenge echoes hub.challenge when the verify token matches, and
// answers 403 when it does not, as Meta's guide does.
func (metaAdapter) Challenge(r *Request, _ [][]byte, cfg Config) (Challenge, bool) {
	handshake, ok := metaHandshake(r, cfg)
	if !handshake {
		return Challenge{}, false
	}
	if !ok {
		return Challenge{Status: http.StatusForbidden}, true
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(r.Query.Get("hub.challenge"))}, true
}

func (a metaAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	if handshake, ok := metaHandshake(r, cfg); handshake {
		if ok {
			return nil // a handshake: it yields no events
		}
		return sigError("%s: hub.verify_token does not match config verify_token", a.name)
	}
	header := headerValue(r.Header, "X-Hub-Signature-256")
	if header == "" {
		return sigError("%s: X-Hub-Signature-256 header missing", a.name)
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return sigError("%s: X-Hub-Signature-256 is not sha256=", a.name)
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(hexSig), r.Body) {
		return nil
	}
	return sigError("%s: no signature matches", a.name)
}

func (a metaAdapter) Interpret(r *Request, cfg Config) (Interpretation, error) {
	if handshake, _ := metaHandshake(r, cfg); handshake {
		return Interpretation{EventType: a.name + ".subscribe", Kind: intake.KindEvent, Challenge: true}, nil
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("%s: body is not a JSON object: %v", a.name, err)
	}
	object := str(m, "object")
	var specs []EventSpec
	for _, entry := range objects(m, "entry") {
		entryID := idString(entry["id"])
		for _, change := range objects(entry, "changes") {
			specs = append(specs, a.change(object, entry, change)...)
		}
		for _, item := range objects(entry, "messaging") {
			spec := EventSpec{
				Type:       a.name + ".messaging." + metaMessagingKind(item),
				Kind:       intake.KindEvent,
				OccurredAt: msTime(item["timestamp"]),
			}
			spec.ProviderEventID = firstOf(str(item, "message", "mid"), itemDigest(a.name+":messaging:", item))
			spec.ObjectIDs = appendID(spec.ObjectIDs, entryID)
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(item, "sender", "id")))
			spec.ObjectIDs = appendID(spec.ObjectIDs, idString(lookup(item, "recipient", "id")))
			spec.Data, spec.DataTruncated = itemData(map[string]any{
				"object": object, "id": entry["id"], "time": entry["time"], "messaging": item,
			})
			specs = append(specs, spec)
		}
	}
	return batch(a.name, "", specs), nil
}

// change turns one entry change into events: each WhatsApp message and
// status its own, any other change one.
func (a metaAdapter) change(object string, entry, change map[string]any) []EventSpec {
	field := str(change, "field")
	value, _ := change["value"].(map[string]any)
	entryID := idString(entry["id"])
	data := func(v any) map[string]any {
		return map[string]any{"object": object, "id": entry["id"], "time": entry["time"], "field": field, "value": v}
	}
	if object == "whatsapp_business_account" && field == "messages" && value != nil {
		var specs []EventSpec
		phone := str(value, "metadata", "phone_number_id")
		for _, msg := range objects(value, "messages") {
			spec := EventSpec{
				ProviderEventID: str(msg, "id"), // the wamid
				Type:            a.name + ".message",
				Kind:            intake.KindEvent,
				OccurredAt:      unixTimeString(msg["timestamp"]),
				ObjectIDs:       appendID(appendID(appendID(nil, str(msg, "id")), str(msg, "from")), phone),
			}
			spec.Data, spec.DataTruncated = itemData(data(withKey(value, "messages", []any{msg}, "statuses")))
			specs = append(specs, spec)
		}
		for _, st := range objects(value, "statuses") {
			status := str(st, "status")
			spec := EventSpec{
				// A message passes through sent, delivered, read: the
				// status is part of the name.
				ProviderEventID: joinID(str(st, "id"), status),
				Type:            a.name + ".status." + typeSegment(status),
				Kind:            intake.KindEvent,
				OccurredAt:      unixTimeString(st["timestamp"]),
				ObjectIDs:       appendID(appendID(appendID(nil, str(st, "id")), str(st, "recipient_id")), phone),
			}
			spec.Data, spec.DataTruncated = itemData(data(withKey(value, "statuses", []any{st}, "messages")))
			specs = append(specs, spec)
		}
		if len(specs) > 0 {
			return specs
		}
	}
	typ := a.name + ".change"
	if field != "" {
		typ = a.name + "." + typeSegment(field)
	}
	spec := EventSpec{
		ProviderEventID: itemDigest(a.name+":"+entryID+":", change),
		Type:            typ,
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(entry["time"]),
		ObjectIDs:       appendID(nil, entryID),
	}
	for _, f := range []string{"id", "post_id", "comment_id", "media_id"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, idString(value[f]))
	}
	spec.Data, spec.DataTruncated = itemData(data(change["value"]))
	return []EventSpec{spec}
}

// metaMessagingKind names a Messenger or Instagram messaging item by the
// part it carries (message, postback, delivery, read, reaction, …).
func metaMessagingKind(item map[string]any) string {
	for _, k := range []string{"message", "postback", "delivery", "read", "reaction", "optin", "referral",
		"account_linking", "policy_enforcement", "game_play", "pass_thread_control", "take_thread_control"} {
		if _, ok := item[k]; ok {
			return k
		}
	}
	return "event"
}

// withKey is a shallow copy of m with key set to v and drop removed.
func withKey(m map[string]any, key string, v any, drop string) map[string]any {
	out := withoutKey(m, drop)
	out[key] = v
	return out
}

// unixTimeString reads unix seconds sent as a string, as WhatsApp does.
func unixTimeString(v any) time.Time {
	if s, ok := v.(string); ok {
		if t := unixTime(json.Number(s)); !t.IsZero() {
			return t
		}
	}
	return unixTime(v)
}

package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/intakehq/intake"
)

// slackAdapter verifies Slack's signed requests
// (https://api.slack.com/authentication/verifying-requests-from-slack) and
// reads the Events API, slash commands and interactivity payloads.
type slackAdapter struct{}

func init() { Register(slackAdapter{}) }

func (slackAdapter) Name() string { return "slack" }

func (slackAdapter) ValidateConfig(cfg Config) error {
	_, err := toleranceSetting(cfg, defaultTolerance)
	return err
}

func (slackAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	tolerance, err := toleranceSetting(cfg, defaultTolerance)
	if err != nil {
		return configError("slack", err)
	}
	header := headerValue(r.Header, "X-Slack-Signature")
	ts := headerValue(r.Header, "X-Slack-Request-Timestamp")
	switch {
	case header == "":
		return sigError("slack: X-Slack-Signature header missing")
	case ts == "":
		return sigError("slack: X-Slack-Request-Timestamp header missing")
	}
	hexSig, ok := strings.CutPrefix(header, "v0=")
	if !ok {
		return sigError("slack: X-Slack-Signature is not a v0 signature")
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return sigError("slack: X-Slack-Signature is not hex")
	}
	if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	// The signing secret is used as written.
	if anyKeySigned(sha256.New, secrets, [][]byte{sig}, []byte("v0:"+ts+":"), r.Body) {
		return nil
	}
	return sigError("slack: no signature matches")
}

// Challenge answers the Events API's url_verification handshake with its
// challenge value, once the signature holds: Slack signs the handshake as it
// signs every request, and a forged one gets 403 instead of an echo.
func (a slackAdapter) Challenge(r *Request, secrets [][]byte, cfg Config) (Challenge, bool) {
	if !isJSONBody(r.Body) {
		return Challenge{}, false
	}
	m, err := decodeObject(r.Body)
	if err != nil || str(m, "type") != "url_verification" {
		return Challenge{}, false
	}
	challenge := str(m, "challenge")
	if challenge == "" {
		return Challenge{}, false
	}
	if a.Verify(r, secrets, cfg) != nil {
		return Challenge{Status: http.StatusForbidden}, true
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}, true
}

func (slackAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if isJSONBody(r.Body) {
		return slackEventsAPI(r.Body)
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return Interpretation{}, Permanent("slack: body is neither JSON nor a form: %v", err)
	}
	switch {
	case form.Has("payload"):
		return slackInteraction([]byte(form.Get("payload")))
	case form.Has("command"):
		return slackCommand(form)
	case form.Has("ssl_check"):
		// Slack probing the certificate of a slash command URL.
		return Interpretation{EventType: "slack.ssl_check", Kind: intake.KindEvent, Challenge: true}, nil
	}
	return Interpretation{}, Permanent("slack: form is neither a slash command nor an interaction")
}

// isJSONBody tells the Events API's JSON from the form-encoded commands and
// interactions sent to the same kind of URL.
func isJSONBody(body []byte) bool {
	trimmed := bytes.TrimSpace(body)
	return len(trimmed) > 0 && trimmed[0] == '{'
}

func slackEventsAPI(body []byte) (Interpretation, error) {
	m, err := decodeObject(body)
	if err != nil {
		return Interpretation{}, Permanent("slack: body is not a JSON object: %v", err)
	}
	typ := str(m, "type")
	switch typ {
	case "":
		return Interpretation{}, Permanent("slack: body has no type")
	case "url_verification":
		return Interpretation{EventType: "slack.url_verification", Kind: intake.KindEvent, Challenge: true}, nil
	}
	spec := EventSpec{Type: "slack." + typeSegment(typ), Kind: intake.KindEvent}
	if typ == "event_callback" {
		ev, _ := m["event"].(map[string]any)
		evType := str(ev, "type")
		if evType == "" {
			return Interpretation{}, Permanent("slack: event_callback has no event type")
		}
		spec.ProviderEventID = str(m, "event_id")
		spec.Type = "slack." + typeSegment(evType)
		spec.OccurredAt = unixTime(m["event_time"])
		spec.ObjectIDs = slackMessageIDs(
			firstOf(str(ev, "channel"), str(ev, "channel", "id"), str(ev, "item", "channel")),
			str(ev, "item", "ts"), str(ev, "ts"), str(ev, "message_ts"), str(ev, "thread_ts"))
		if evType == "link_shared" {
			spec.Kind = intake.KindLinkUnfurl
		}
	}
	if err := slackData(&spec, body); err != nil {
		return Interpretation{}, err
	}
	return single(spec), nil
}

func slackInteraction(payload []byte) (Interpretation, error) {
	p, err := decodeObject(payload)
	if err != nil {
		return Interpretation{}, Permanent("slack: interaction payload is not a JSON object: %v", err)
	}
	typ := str(p, "type")
	if typ == "" {
		return Interpretation{}, Permanent("slack: interaction payload has no type")
	}
	spec := EventSpec{
		ProviderEventID: firstOf(str(p, "trigger_id"), idString(p["id"])),
		Type:            "slack." + typeSegment(typ),
		Kind:            intake.KindEvent,
		ObjectIDs: slackMessageIDs(
			firstOf(str(p, "channel", "id"), str(p, "container", "channel_id")),
			str(p, "message", "ts"), str(p, "container", "message_ts"), str(p, "message", "thread_ts")),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(p, "view", "id"))
	if err := slackData(&spec, payload); err != nil {
		return Interpretation{}, err
	}
	return single(spec), nil
}

func slackCommand(form url.Values) (Interpretation, error) {
	fields := make(map[string]string, len(form))
	for k := range form {
		if k != "token" {
			fields[k] = form.Get(k)
		}
	}
	raw, err := marshalJSON(fields)
	if err != nil {
		return Interpretation{}, Permanent("slack: slash command: %v", err)
	}
	spec := EventSpec{
		ProviderEventID: form.Get("trigger_id"),
		Type:            "slack.slash_command",
		Kind:            intake.KindEvent,
		ObjectIDs:       appendID(nil, form.Get("channel_id")),
	}
	spec.Data, spec.DataTruncated = eventData(raw)
	return single(spec), nil
}

// slackData sets the event's data from a JSON object without its legacy
// verification token, which is a credential.
func slackData(spec *EventSpec, raw []byte) error {
	clean, err := withoutFields(raw, "token")
	if err != nil {
		return Permanent("slack: %v", err)
	}
	spec.Data, spec.DataTruncated = eventData(clean)
	return nil
}

// slackMessageIDs names a channel and its messages as "channel:ts", the
// pair an app gets back when it posts a message and can link to a record.
func slackMessageIDs(channel string, timestamps ...string) []string {
	if channel == "" {
		return nil
	}
	ids := []string{channel}
	for _, ts := range timestamps {
		if ts != "" {
			ids = appendID(ids, channel+":"+ts)
		}
	}
	return ids
}

// firstOf is the first non-empty string.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

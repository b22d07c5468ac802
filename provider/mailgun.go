package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/intakehq/intake"
)

// mailgunAdapter verifies Mailgun webhooks
// (https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/#securing-webhooks):
// the body's signature object (or, for legacy form posts, the timestamp,
// token and signature fields) holds the hex HMAC-SHA256 of timestamp +
// token under the HTTP webhook signing key. Mailgun asks for no fixed
// tolerance, so the timestamp is judged only when config tolerance is set;
// each event's id stops replays of what was already accepted.
type mailgunAdapter struct{}

func init() { Register(mailgunAdapter{}) }

func (mailgunAdapter) Name() string { return "mailgun" }

func (mailgunAdapter) ValidateConfig(cfg Config) error {
	if _, ok := cfg["tolerance"]; ok {
		_, err := toleranceSetting(cfg, defaultTolerance)
		return err
	}
	return nil
}

// mailgunSignature reads timestamp, token and signature from either body form.
func mailgunSignature(body []byte) (ts, token, sig string, ok bool) {
	if isJSONBody(body) {
		m, err := decodeObject(body)
		if err != nil {
			return "", "", "", false
		}
		ts, token, sig = idString(lookup(m, "signature", "timestamp")), str(m, "signature", "token"), str(m, "signature", "signature")
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return "", "", "", false
		}
		ts, token, sig = form.Get("timestamp"), form.Get("token"), form.Get("signature")
	}
	return ts, token, sig, ts != "" && token != "" && sig != ""
}

func (mailgunAdapter) Verify(r *Request, secrets [][]byte, cfg Config) error {
	ts, token, sig, ok := mailgunSignature(r.Body)
	if !ok {
		return sigError("mailgun: body carries no timestamp, token and signature")
	}
	if _, set := cfg["tolerance"]; set {
		tolerance, err := toleranceSetting(cfg, defaultTolerance)
		if err != nil {
			return configError("mailgun", err)
		}
		if err := checkTimestamp(ts, r.ReceivedAt, tolerance); err != nil {
			return fmt.Errorf("mailgun: %w", err)
		}
	}
	if anyKeySigned(sha256.New, secrets, decodeHexSigs(sig), []byte(ts+token)) {
		return nil
	}
	return sigError("mailgun: no signature matches")
}

func (mailgunAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	if !isJSONBody(r.Body) {
		return mailgunLegacy(r.Body)
	}
	var envelope struct {
		EventData json.RawMessage `json:"event-data"`
	}
	if err := json.Unmarshal(r.Body, &envelope); err != nil || len(bytes.TrimSpace(envelope.EventData)) == 0 {
		return Interpretation{}, Permanent("mailgun: body has no event-data")
	}
	m, err := decodeObject(envelope.EventData)
	if err != nil {
		return Interpretation{}, Permanent("mailgun: event-data is not a JSON object: %v", err)
	}
	event := str(m, "event")
	if event == "" {
		return Interpretation{}, Permanent("mailgun: event-data has no event")
	}
	spec := EventSpec{
		ProviderEventID: idString(m["id"]),
		Type:            "mailgun." + typeSegment(event),
		Kind:            intake.KindEvent,
		OccurredAt:      floatSeconds(m["timestamp"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "message", "headers", "message-id"))
	spec.Data, spec.DataTruncated = eventData(envelope.EventData)
	return single(spec), nil
}

// mailgunLegacy reads a legacy form-encoded webhook; it names no event id,
// so the message is deduplicated by its body.
func mailgunLegacy(body []byte) (Interpretation, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("event") == "" {
		return Interpretation{}, Permanent("mailgun: form names no event")
	}
	spec := EventSpec{
		Type:       "mailgun." + typeSegment(form.Get("event")),
		Kind:       intake.KindEvent,
		OccurredAt: floatSeconds(json.Number(form.Get("timestamp"))),
		ObjectIDs:  appendID(nil, firstOf(form.Get("Message-Id"), form.Get("message-id"))),
	}
	spec.Data, spec.DataTruncated = formData(form, "signature", "token")
	return single(spec), nil
}

// floatSeconds reads unix seconds with a fraction (1521472262.908181).
func floatSeconds(v any) time.Time {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 253402300799 {
		return time.Time{}
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

package provider

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"

	"github.com/intakehq/intake"
)

// twilioAdapter verifies Twilio webhooks
// (https://www.twilio.com/docs/usage/webhooks/webhooks-security):
// X-Twilio-Signature is the base64 HMAC-SHA1, under the account's auth
// token, of the URL Twilio was given followed by each POST parameter's name
// and value, sorted by name. A JSON (or other non-form) body is instead
// pinned by a bodySHA256 query parameter, the hex SHA-256 of the body, and
// only the URL is signed. Twilio may sign the URL with or without the
// default port, so both are tried, as its helper libraries do. Twilio signs
// no time.
type twilioAdapter struct{}

func init() { Register(twilioAdapter{}) }

func (twilioAdapter) Name() string { return "twilio" }

func (twilioAdapter) ValidateConfig(Config) error { return nil }

func (twilioAdapter) Verify(r *Request, secrets [][]byte, _ Config) error {
	header := headerValue(r.Header, "X-Twilio-Signature")
	if header == "" {
		return sigError("twilio: X-Twilio-Signature header missing")
	}
	sig, err := decodeBase64Sig(header)
	if err != nil {
		return sigError("twilio: X-Twilio-Signature is not base64")
	}
	if r.URL == "" {
		return sigError("twilio: the public URL is unknown")
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return sigError("twilio: the public URL does not parse")
	}
	var params []byte
	if bodyHash := u.Query().Get("bodySHA256"); bodyHash != "" {
		sum := sha256.Sum256(r.Body)
		if subtle.ConstantTimeCompare([]byte(strings.ToLower(bodyHash)), []byte(hex.EncodeToString(sum[:]))) != 1 {
			return sigError("twilio: bodySHA256 does not match the body")
		}
	} else if r.Method != "GET" && len(r.Body) > 0 {
		form, err := url.ParseQuery(string(r.Body))
		if err != nil {
			return sigError("twilio: body is not a form and the URL has no bodySHA256")
		}
		params = twilioParams(form)
	}
	for _, candidate := range twilioURLs(r.URL) {
		if anyKeySigned(sha1.New, secrets, [][]byte{sig}, []byte(candidate), params) {
			return nil
		}
	}
	return sigError("twilio: no signature matches")
}

// twilioParams concatenates the form's names and values, sorted by name and
// then by value, each distinct pair once (as twilio-python's
// compute_signature does).
func twilioParams(form url.Values) []byte {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, k := range names {
		values := append([]string(nil), form[k]...)
		sort.Strings(values)
		for i, v := range values {
			if i > 0 && v == values[i-1] {
				continue
			}
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	return b.Bytes()
}

// twilioURLs is the URL as given, without its port, and with the scheme's
// default port when it had none.
func twilioURLs(raw string) []string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return []string{raw}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	host, port := authority, ""
	if i := strings.LastIndex(authority, ":"); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
	}
	out := []string{raw, scheme + "://" + userinfo + host + tail}
	if port == "" {
		def := "443"
		if strings.EqualFold(scheme, "http") {
			def = "80"
		}
		out = append(out, scheme+"://"+userinfo+host+":"+def+tail)
	}
	return out
}

func (twilioAdapter) Interpret(r *Request, _ Config) (Interpretation, error) {
	idem := headerValue(r.Header, "I-Twilio-Idempotency-Token")
	trimmed := bytes.TrimSpace(r.Body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return twilioJSON(r.Body, idem)
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return Interpretation{}, Permanent("twilio: body is neither JSON nor a form: %v", err)
	}
	if r.Method == "GET" {
		form = r.Query
	}
	spec := EventSpec{ProviderEventID: idem, Kind: intake.KindEvent}
	switch message, call := firstOf(form.Get("MessageSid"), form.Get("SmsSid")), form.Get("CallSid"); {
	case message != "":
		// An inbound message has no MessageStatus; a status callback does.
		spec.Type = "twilio.message"
		status := form.Get("MessageStatus")
		if status != "" {
			spec.Type += "." + typeSegment(status)
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = firstOf(joinID(message, status), message)
		}
		spec.ObjectIDs = []string{message}
	case call != "":
		status := form.Get("CallStatus")
		spec.Type = "twilio.call"
		if status != "" {
			spec.Type += "." + typeSegment(status)
		}
		if spec.ProviderEventID == "" {
			spec.ProviderEventID = joinID(call, status, form.Get("SequenceNumber"))
		}
		spec.ObjectIDs = []string{call}
	default:
		spec.Type = "twilio.webhook"
	}
	spec.Data, spec.DataTruncated = formData(form)
	return single(spec), nil
}

// twilioJSON reads a JSON webhook: a CloudEvent or a list of them (Event
// Streams), or any other object.
func twilioJSON(body []byte, idem string) (Interpretation, error) {
	if bytes.TrimSpace(body)[0] == '[' {
		items, err := decodeArray(body)
		if err != nil {
			return Interpretation{}, Permanent("twilio: body is not a JSON array of objects: %v", err)
		}
		specs := make([]EventSpec, 0, len(items))
		for _, item := range items {
			specs = append(specs, twilioCloudEvent(item, ""))
		}
		return batch("twilio", idem, specs), nil
	}
	m, err := decodeObject(body)
	if err != nil {
		return Interpretation{}, Permanent("twilio: body is not a JSON object: %v", err)
	}
	return single(twilioCloudEvent(m, idem)), nil
}

func twilioCloudEvent(m map[string]any, idem string) EventSpec {
	spec := EventSpec{
		ProviderEventID: firstOf(idem, str(m, "id")),
		Type:            "twilio.webhook",
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["time"]),
	}
	// "com.twilio.messaging.message.delivered" → twilio.messaging.message.delivered
	if t := strings.TrimPrefix(str(m, "type"), "com.twilio."); t != "" {
		spec.Type = "twilio." + typeSegment(t)
	}
	for _, f := range []string{"messageSid", "callSid", "sid"} {
		spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "data", f))
	}
	spec.Data, spec.DataTruncated = itemData(m)
	return spec
}

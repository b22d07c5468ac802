package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

// nullData is the data of an event whose body holds no JSON.
var nullData = json.RawMessage("null")

const (
	// smallField is the largest field value a trimmed payload keeps whole.
	smallField = 1 << 10
	// trimDepth is how many levels of nested objects a trimmed payload
	// descends into, enough for Stripe's data.object fields.
	trimDepth = 4
	// maxTypeSegment bounds a provider-chosen part of an event type.
	maxTypeSegment = 128
)

// decodeObject reads body as exactly one JSON object, keeping numbers as
// json.Number so ids and timestamps stay exact.
func decodeObject(body []byte) (map[string]any, error) {
	v, err := decodeTree(body)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	switch {
	case v == nil:
		return nil, errors.New("null is not an object")
	case !ok:
		return nil, fmt.Errorf("a JSON %s is not an object", jsonKind(v))
	}
	return m, nil
}

// decodeArray reads body as exactly one JSON array of objects (SendGrid's
// and HubSpot's batches), numbers kept exact.
func decodeArray(body []byte) ([]map[string]any, error) {
	v, err := decodeTree(body)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	switch {
	case v == nil:
		return nil, errors.New("null is not an array")
	case !ok:
		return nil, fmt.Errorf("a JSON %s is not an array", jsonKind(v))
	}
	items := make([]map[string]any, len(list))
	for i, it := range list {
		if items[i], ok = it.(map[string]any); !ok {
			return nil, fmt.Errorf("item %d is not an object", i)
		}
	}
	return items, nil
}

// objects is the list at path as objects, skipping anything else.
func objects(m map[string]any, path ...string) []map[string]any {
	list, _ := lookup(m, path...).([]any)
	out := make([]map[string]any, 0, len(list))
	for _, v := range list {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// lookup walks nested objects by key; nil when any step is missing.
func lookup(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}

// str is the string at path, "" when absent or not a string.
func str(m map[string]any, path ...string) string {
	s, _ := lookup(m, path...).(string)
	return s
}

// idString renders an id field, which some providers send as a number.
func idString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// unixTime reads unix seconds, or RFC 3339 text; zero when neither or
// implausible, so a bad value never reaches the store.
func unixTime(v any) time.Time {
	var t time.Time
	switch x := v.(type) {
	case json.Number:
		sec, err := x.Int64()
		if err != nil {
			return time.Time{}
		}
		t = time.Unix(sec, 0)
	case string:
		p, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}
		}
		t = p
	default:
		return time.Time{}
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}
	}
	return t.UTC()
}

// msTime reads unix milliseconds; zero when absent or implausible.
func msTime(v any) time.Time {
	var ms int64
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return time.Time{}
		}
		ms = n
	case string:
		n, err := json.Number(x).Int64()
		if err != nil {
			return time.Time{}
		}
		ms = n
	default:
		return time.Time{}
	}
	t := time.UnixMilli(ms).UTC()
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}
	}
	return t
}

// firstTime is the first non-zero time.
func firstTime(times ...time.Time) time.Time {
	for _, t := range times {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// typeSegment makes a provider-chosen name safe inside an event type, which
// consumers match by exact text or prefix: bounded, and only letters,
// digits and . _ - : / (anything else becomes _).
func typeSegment(s string) string {
	if len(s) > maxTypeSegment {
		s = s[:maxTypeSegment]
	}
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("._-:/", c) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// appendID adds a provider object id once, skipping empty ones.
func appendID(ids []string, id string) []string {
	if id == "" {
		return ids
	}
	for _, have := range ids {
		if have == id {
			return ids
		}
	}
	return append(ids, id)
}

// eventData is what an event carries of a JSON value: all of it when it fits
// intake.MaxEventData; otherwise the small fields of the top-level object and
// of its nested objects, and truncated is true (consumers then fetch the raw
// body). raw must be valid JSON.
func eventData(raw []byte) (data json.RawMessage, truncated bool) {
	if !utf8.Valid(raw) {
		// Databases refuse JSON that is not UTF-8; the decoder substitutes
		// U+FFFD for the bad bytes.
		v, err := decodeTree(raw)
		if err != nil {
			return nullData, true
		}
		clean, err := marshalJSON(v)
		if err != nil {
			return nullData, true
		}
		raw = clean
	}
	if len(raw) <= intake.MaxEventData {
		return bytes.Clone(raw), false
	}
	if trimmed := trimObject(raw, intake.MaxEventData, trimDepth); trimmed != nil {
		return trimmed, true
	}
	return nullData, true
}

// trimObject keeps, within budget bytes, every small field of the object
// raw and then its larger nested objects trimmed the same way; arrays and
// long strings that do not fit whole are dropped. Keys are written sorted,
// so the result is deterministic. nil when raw is not an object or nothing
// fits.
func trimObject(raw []byte, budget, depth int) json.RawMessage {
	if depth <= 0 || budget < 2 {
		return nil
	}
	// The members as they lie in raw, the last of duplicate names kept.
	fields := map[string][]byte{}
	if !members(raw, func(name string, value []byte) { fields[name] = value }) {
		return nil
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	kept := map[string]json.RawMessage{}
	used := 2 // the braces
	cost := func(k string, v []byte) int {
		qk, _ := json.Marshal(k)
		return len(qk) + 1 + len(v) + 1 // key, colon, value, comma
	}
	for _, k := range keys {
		v := fields[k]
		// Compacting may shrink a value written with spaces below the
		// bound; one far larger is not copied to find out.
		if len(v) > 4*smallField {
			continue
		}
		if v = compact(v); len(v) > smallField {
			continue
		}
		if c := cost(k, v); used+c <= budget {
			kept[k] = v
			used += c
		}
	}
	for _, k := range keys {
		v := fields[k]
		if _, done := kept[k]; done || len(v) == 0 || v[0] != '{' {
			continue
		}
		room := budget - used - cost(k, nil)
		if sub := trimObject(v, room, depth-1); sub != nil {
			kept[k] = sub
			used += cost(k, sub)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	// Written by hand: json.Marshal would HTML-escape the values and could
	// outgrow the budget.
	out := make([]byte, 0, used)
	out = append(out, '{')
	for _, k := range keys {
		v, ok := kept[k]
		if !ok {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		qk, _ := json.Marshal(k)
		out = append(out, qk...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}')
}

// compact strips insignificant whitespace so sizes are counted as written.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// withoutFields returns the JSON object raw with the named top-level fields
// removed (Slack's legacy verification token, for one).
func withoutFields(raw []byte, names ...string) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for _, n := range names {
		delete(fields, n)
	}
	return marshalJSON(fields)
}

// marshalJSON encodes v without HTML-escaping, so text such as Slack's
// "<@U123>" mentions reaches consumers as the provider wrote it.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// bodyData is an event's data from a body that may or may not be JSON, for
// the generic adapters: non-JSON bodies are reached through the raw body.
func bodyData(body []byte) (json.RawMessage, bool) {
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		return nullData, false
	case json.Valid(body):
		return eventData(body)
	default:
		return nullData, true
	}
}

// single is the interpretation of a message that carries one event.
func single(spec EventSpec) Interpretation {
	return Interpretation{
		ProviderEventID: spec.ProviderEventID,
		EventType:       spec.Type,
		Kind:            spec.Kind,
		Events:          []EventSpec{spec},
	}
}

// batch is the interpretation of a message that carries several events,
// each with its own provider event id. messageID names the whole delivery
// when the provider gives one; the message-level type is the items' common
// type, or "<provider>.batch" when they differ.
func batch(provider, messageID string, specs []EventSpec) Interpretation {
	in := Interpretation{ProviderEventID: messageID, Kind: intake.KindEvent, Events: specs}
	for i, s := range specs {
		if i == 0 {
			in.EventType, in.Kind = s.Type, s.Kind
			continue
		}
		if s.Type != in.EventType {
			in.EventType = provider + ".batch"
		}
		if s.Kind != in.Kind {
			in.Kind = intake.KindEvent
		}
	}
	if len(specs) == 0 {
		in.EventType = provider + ".batch"
	}
	return in
}

// itemDigest names a batch item that carries no id of its own by a digest
// of its content, re-encoded with sorted keys so the same item sent again in
// another batch gets the same name.
func itemDigest(prefix string, item any) string {
	canon, err := marshalJSON(item)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return prefix + hex.EncodeToString(sum[:16])
}

// itemData is a batch item's data as compact JSON, trimmed like any event's.
func itemData(item any) (json.RawMessage, bool) {
	raw, err := marshalJSON(item)
	if err != nil {
		return nullData, true
	}
	return eventData(raw)
}

// formData is a form body's fields (the first value of each, minus the
// named credentials) as a JSON object.
func formData(form url.Values, without ...string) (json.RawMessage, bool) {
	fields := make(map[string]string, len(form))
	for k := range form {
		fields[k] = form.Get(k)
	}
	for _, k := range without {
		delete(fields, k)
	}
	return itemData(fields)
}

// joinID joins the parts of an id built from stable fields; empty when any
// part is missing, so a half-built id never merges distinct events.
func joinID(parts ...string) string {
	for _, p := range parts {
		if p == "" {
			return ""
		}
	}
	return strings.Join(parts, ":")
}

// snakeCase turns a provider's CamelCase name ("SpamComplaint") into a type
// segment ("spam_complaint").
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

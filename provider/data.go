package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null is not an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
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
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
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
	var fields map[string]json.RawMessage
	if depth <= 0 || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil
	}
	if budget < 2 {
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
		v := compact(fields[k])
		if len(v) > smallField {
			continue
		}
		if c := cost(k, v); used+c <= budget {
			kept[k] = v
			used += c
		}
	}
	for _, k := range keys {
		v := bytes.TrimSpace(fields[k])
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

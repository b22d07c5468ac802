package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
)

// Request is a stored webhook request as an interpret script sees it.
type Request struct {
	Method  string            `json:"method"`
	Query   map[string]string `json:"query"`
	Headers map[string]string `json:"headers"` // lower-case names, first value
	// Body is the raw body (bytes that are not UTF-8 arrive as U+FFFD); the
	// script also gets it parsed, as request.json (null when not JSON).
	Body string `json:"body"`
}

// NewRequest builds the script's view of a request: lower-case header names
// and the first value of each header and query parameter, credentials
// removed as RequestView removes them. The script runs after verification:
// it has no need of them, and what it returns may be shown.
func NewRequest(method string, query url.Values, header http.Header, body []byte, credentials ...string) Request {
	r := Request{Method: method, Query: map[string]string{}, Headers: map[string]string{}, Body: string(body)}
	for k, v := range query {
		if len(v) > 0 && !redact.Param(k) {
			r.Query[k] = v[0]
		}
	}
	for k, v := range redact.Headers(header, credentials...) {
		if len(v) > 0 {
			r.Headers[strings.ToLower(k)] = v[0]
		}
	}
	return r
}

// Event is one event an interpret script read from a request; it has the
// fields of provider.EventSpec of the same names, so the worker converts it
// field by field.
type Event struct {
	ProviderEventID string           `json:"id,omitempty"`
	Type            string           `json:"type"`
	Kind            intake.EventKind `json:"kind"`
	OccurredAt      time.Time        `json:"occurred_at,omitzero"`
	Data            json.RawMessage  `json:"data"`
	ObjectIDs       []string         `json:"object_ids,omitempty"`
}

// maxType bounds an event type a script names.
const maxType = 256

// Interpret runs the script's interpret(request) and returns the events it
// names, each checked: type required, kind event|change_notice|link_unfurl
// (event when absent), occurred_at RFC 3339 when given, data at most
// intake.MaxEventData of JSON, object_ids strings. Every failure is a
// *ScriptError, except the caller's own context ending, which is ctx.Err().
func (e *Engine) Interpret(ctx context.Context, s Script, r Request) ([]Event, error) {
	return e.interpret(ctx, s, r, true)
}

func (e *Engine) interpret(ctx context.Context, s Script, r Request, reuse bool) ([]Event, error) {
	if requestSize(r) > e.maxInput() {
		// Refused before it is marshalled: a request several times the VM's
		// memory would cost the server that much in JSON first.
		return nil, &ScriptError{Kind: KindInterpret, Reason: ReasonInput, Message: "body too large"}
	}
	if r.Query == nil {
		r.Query = map[string]string{}
	}
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	args, err := json.Marshal([]Request{r})
	if err != nil {
		return nil, fmt.Errorf("rules: interpret request: %w", err)
	}
	if len(args) > e.cfg.ScriptMemory/2 {
		// Escaping grew it (a control character takes six bytes).
		return nil, &ScriptError{Kind: KindInterpret, Reason: ReasonInput, Message: "body too large"}
	}
	raw, err := e.call(ctx, KindInterpret, s, string(args), reuse)
	if err != nil {
		return nil, err
	}
	return parseEvents(raw)
}

// requestSize is the bytes of r a script is given.
func requestSize(r Request) int {
	n := len(r.Method) + len(r.Body)
	for _, m := range []map[string]string{r.Query, r.Headers} {
		for k, v := range m {
			n += len(k) + len(v)
		}
	}
	return n
}

func parseEvents(raw []byte) ([]Event, error) {
	bad := func(format string, args ...any) error {
		return &ScriptError{Kind: KindInterpret, Reason: ReasonResult, Message: fmt.Sprintf(format, args...)}
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, bad("interpret must return an array of events, got %s", preview(raw))
	}
	if elements(raw, intake.MaxEventsPerMessage) > intake.MaxEventsPerMessage {
		return nil, &ScriptError{Kind: KindInterpret, Reason: ReasonTooManyEvents,
			Message: fmt.Sprintf("the script returned more than %d events", intake.MaxEventsPerMessage)}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad("interpret's result: %v", err)
	}
	events := make([]Event, 0, len(items))
	for i, item := range items {
		ev, err := parseEvent(item)
		if err != nil {
			return nil, bad("event %d: %v", i, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// elements counts the elements of the JSON array raw, stopping past most,
// without decoding them. Malformed JSON is left for the decoder to refuse.
func elements(raw []byte, most int) int {
	if rest := bytes.TrimLeft(raw[1:], " \t\n\r"); len(rest) == 0 || rest[0] == ']' {
		return 0
	}
	n, depth, inString, escaped := 1, 0, false, false
	for _, b := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				if n++; n > most {
					return n
				}
			}
		}
	}
	return n
}

func parseEvent(item json.RawMessage) (Event, error) {
	var in struct {
		ID         json.RawMessage   `json:"id"`
		Type       *string           `json:"type"`
		Kind       *string           `json:"kind"`
		OccurredAt *string           `json:"occurred_at"`
		Data       json.RawMessage   `json:"data"`
		ObjectIDs  []json.RawMessage `json:"object_ids"`
	}
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.DisallowUnknownFields()
	if item[0] != '{' {
		return Event{}, fmt.Errorf("want an object {id, type, kind, occurred_at, data, object_ids}, got %s", preview(item))
	}
	if err := dec.Decode(&in); err != nil {
		return Event{}, fmt.Errorf("%v", err)
	}
	ev := Event{Kind: intake.KindEvent, Data: in.Data}
	if in.Type == nil || strings.TrimSpace(*in.Type) == "" {
		return Event{}, fmt.Errorf("type is required")
	}
	if len(*in.Type) > maxType || strings.ContainsFunc(*in.Type, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Event{}, fmt.Errorf("type %q: at most %d characters, no spaces or control characters", preview([]byte(*in.Type)), maxType)
	}
	ev.Type = *in.Type
	if in.ID != nil && string(in.ID) != "null" {
		if json.Unmarshal(in.ID, &ev.ProviderEventID) != nil {
			return Event{}, fmt.Errorf("id must be a string, got %s", preview(in.ID))
		}
	}
	if in.Kind != nil {
		switch k := intake.EventKind(*in.Kind); k {
		case intake.KindEvent, intake.KindChangeNotice, intake.KindLinkUnfurl:
			ev.Kind = k
		default:
			return Event{}, fmt.Errorf("kind %q: want event, change_notice or link_unfurl", *in.Kind)
		}
	}
	if in.OccurredAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.OccurredAt)
		if err != nil {
			return Event{}, fmt.Errorf("occurred_at %q is not an RFC 3339 time", *in.OccurredAt)
		}
		ev.OccurredAt = t.UTC()
	}
	if len(ev.Data) == 0 {
		ev.Data = json.RawMessage("null")
	}
	if len(ev.Data) > intake.MaxEventData {
		return Event{}, fmt.Errorf("data is %d bytes, at most %d", len(ev.Data), intake.MaxEventData)
	}
	for i, raw := range in.ObjectIDs {
		var id string
		if json.Unmarshal(raw, &id) != nil || id == "" {
			return Event{}, fmt.Errorf("object_ids[%d] must be a non-empty string, got %s", i, preview(raw))
		}
		ev.ObjectIDs = append(ev.ObjectIDs, id)
	}
	return ev, nil
}

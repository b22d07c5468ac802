package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Output is what a transform makes of one delivery.
type Output struct {
	// Skip is true when the transform returned null: the caller records the
	// delivery filtered and sends nothing.
	Skip bool
	// Body is what is sent: JSON when JSON is true, else the string the
	// transform returned, as is.
	Body []byte
	JSON bool
	// Header holds the extra headers the transform set, never webhook-*,
	// host, content-length, transfer-encoding or connection.
	Header http.Header
}

// MarshalJSON shows the output as a dry run reports it: a JSON body as JSON,
// a string body as a string.
func (o *Output) MarshalJSON() ([]byte, error) {
	var body any
	switch {
	case o.Skip:
		body = nil
	case o.JSON:
		body = json.RawMessage(o.Body)
	default:
		body = string(o.Body)
	}
	return json.Marshal(struct {
		Skip    bool        `json:"skip"`
		Body    any         `json:"body"`
		Headers http.Header `json:"headers,omitempty"`
	}{o.Skip, body, o.Header})
}

// Transform runs the script's transform(event, context) on the envelope
// event (JSON) with the context argument tctx (anything that marshals to
// JSON; nil is {}). Every failure is a *ScriptError, except the caller's
// own context ending, which is ctx.Err().
func (e *Engine) Transform(ctx context.Context, s Script, event json.RawMessage, tctx any) (*Output, error) {
	return e.transform(ctx, s, event, tctx, true)
}

func (e *Engine) transform(ctx context.Context, s Script, event json.RawMessage, tctx any, reuse bool) (*Output, error) {
	if tctx == nil {
		tctx = struct{}{}
	}
	c, err := json.Marshal(tctx)
	if err != nil {
		return nil, fmt.Errorf("rules: transform context: %w", err)
	}
	if len(event) == 0 {
		event = json.RawMessage("null")
	}
	if len(event)+len(c) > e.maxInput() {
		// Not from the data plane, whose events and request headers are
		// bounded far below; a dry run's event is the API's to bound.
		return nil, &ScriptError{Kind: KindTransform, Reason: ReasonInput, Message: "input too large"}
	}
	args := make([]byte, 0, len(event)+len(c)+3)
	args = append(append(append(append(append(args, '['), event...), ','), c...), ']')
	raw, err := e.call(ctx, KindTransform, s, string(args), reuse)
	if err != nil {
		return nil, err
	}
	return parseOutput(raw)
}

func parseOutput(raw []byte) (*Output, error) {
	if string(raw) == "null" {
		return &Output{Skip: true}, nil
	}
	bad := func(format string, args ...any) error {
		return &ScriptError{Kind: KindTransform, Reason: ReasonResult, Message: fmt.Sprintf(format, args...)}
	}
	var res struct {
		Body    json.RawMessage            `json:"body"`
		Headers map[string]json.RawMessage `json:"headers"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(raw) == 0 || raw[0] != '{' || dec.Decode(&res) != nil {
		return nil, bad("transform must return {body, headers} or null, got %s", preview(raw))
	}
	if res.Body == nil {
		return nil, bad("transform's result has no body (return null to skip the delivery)")
	}
	out := &Output{Body: res.Body, JSON: true, Header: http.Header{}}
	if res.Body[0] == '"' {
		var s string
		if err := json.Unmarshal(res.Body, &s); err != nil {
			return nil, bad("transform body: %v", err)
		}
		out.Body, out.JSON = []byte(s), false
	}
	for name, rawValue := range res.Headers {
		var value string
		if err := json.Unmarshal(rawValue, &value); err != nil {
			return nil, bad("header %q: the value must be a string, got %s", name, preview(rawValue))
		}
		if err := checkHeader(name, value); err != nil {
			return nil, bad("%v", err)
		}
		out.Header.Set(name, value)
	}
	return out, nil
}

// reserved are headers a transform may not set: intake's signature headers
// and those that frame the request.
var reserved = map[string]bool{"host": true, "content-length": true, "transfer-encoding": true, "connection": true}

func checkHeader(name, value string) error {
	lower := strings.ToLower(name)
	if reserved[lower] || strings.HasPrefix(lower, "webhook-") {
		return fmt.Errorf("header %q is set by intake and may not be changed by a transform", name)
	}
	if name == "" {
		return fmt.Errorf("a header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Errorf("header name %q is not a valid HTTP token", name)
		}
	}
	for i := 0; i < len(value); i++ {
		if b := value[i]; b != '\t' && (b < ' ' || b == 0x7f) {
			return fmt.Errorf("header %q: the value holds a control character", name)
		}
	}
	return nil
}

// isTokenChar reports whether b may appear in a header name (RFC 9110 §5.6.2).
func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

func preview(raw []byte) string {
	const most = 80
	if len(raw) > most {
		return strings.ToValidUTF8(string(raw[:most]), "") + "…"
	}
	return string(raw)
}

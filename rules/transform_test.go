package rules

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func script(src string) Script { return Script{Scope: "org-a", Source: src} }

func scriptErr(t *testing.T, err error, reason string) *ScriptError {
	t.Helper()
	var se *ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want a *ScriptError", err, err)
	}
	if se.Reason != reason {
		t.Fatalf("error %q has reason %q, want %q", se, se.Reason, reason)
	}
	return se
}

const reshape = `function transform(event, context) {
  if (event.type !== "stripe.invoice.paid") {
    return null;
  }
  var o = event.data.object;
  return {
    body: {text: "Invoice paid: " + (o.amount / 100) + " " + o.currency.toUpperCase(), to: context.app},
    headers: {"X-Tenant": o.metadata.tenant, "content-type": "application/json"},
  };
}`

func TestTransformReshapesTheBodyAndAddsHeaders(t *testing.T) {
	e := newEngine(t, Config{})
	if err := e.Check(context.Background(), "", KindTransform, reshape); err != nil {
		t.Fatal(err)
	}
	out, err := e.Transform(context.Background(), script(reshape), json.RawMessage(stripeInvoice), map[string]string{"app": "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Skip || !out.JSON {
		t.Fatalf("output %+v, want a JSON body", out)
	}
	var body map[string]string
	if err := json.Unmarshal(out.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["text"] != "Invoice paid: 2500 EUR" || body["to"] != "billing" {
		t.Errorf("body %s", out.Body)
	}
	if out.Header.Get("X-Tenant") != "acme" || out.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", out.Header)
	}
}

func TestTransformReturningNullSkipsTheDelivery(t *testing.T) {
	e := newEngine(t, Config{})
	out, err := e.Transform(context.Background(), script(reshape), json.RawMessage(githubPush), nil)
	if err != nil || !out.Skip {
		t.Fatalf("Transform of another type = %+v, %v; want Skip", out, err)
	}
}

func TestTransformStringBodyIsSentAsIs(t *testing.T) {
	e := newEngine(t, Config{})
	src := `function transform(event) { return {body: "type=" + event.type + "&ok=1"}; }`
	out, err := e.Transform(context.Background(), script(src), json.RawMessage(stripeInvoice), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.JSON || string(out.Body) != "type=stripe.invoice.paid&ok=1" {
		t.Fatalf("output %+v (%s), want the string as is", out, out.Body)
	}
}

func TestTransformRefusesReservedAndInvalidHeaders(t *testing.T) {
	e := newEngine(t, Config{})
	for _, headers := range []string{
		`{"webhook-signature": "v1,forged"}`,
		`{"Webhook-Id": "x"}`,
		`{"Host": "evil.example"}`,
		`{"content-length": "1"}`,
		`{"bad name": "x"}`,
		`{"x-ok": "a\r\nInjected: yes"}`,
		`{"x-num": 5}`,
		`{"": "x"}`,
	} {
		src := `function transform(event) { return {body: {}, headers: ` + headers + `}; }`
		_, err := e.Transform(context.Background(), script(src), json.RawMessage(stripeInvoice), nil)
		scriptErr(t, err, ReasonResult)
		if !strings.HasPrefix(err.Error(), "transform_error: ") {
			t.Errorf("headers %s: error %q, want the transform_error prefix", headers, err)
		}
	}
}

func TestTransformResultOfTheWrongShapeIsAnError(t *testing.T) {
	e := newEngine(t, Config{})
	for _, ret := range []string{`42`, `"text"`, `[1]`, `{headers: {}}`, `{body: 1, bdy: 2}`, `undefined`, `Promise.resolve({body: 1})`} {
		src := `function transform(event) { return ` + ret + `; }`
		_, err := e.Transform(context.Background(), script(src), json.RawMessage(stripeInvoice), nil)
		scriptErr(t, err, ReasonResult)
	}
}

func TestTransformThatThrowsGivesTheJSMessage(t *testing.T) {
	e := newEngine(t, Config{})
	src := "function transform(event) {\n  throw new Error(\"no tenant on \" + event.type);\n}"
	_, err := e.Transform(context.Background(), script(src), json.RawMessage(stripeInvoice), nil)
	se := scriptErr(t, err, ReasonThrow)
	if want := "transform_error: Error: no tenant on stripe.invoice.paid (line 2, column"; !strings.HasPrefix(se.Error(), want) {
		t.Fatalf("error %q, want it to start %q", se, want)
	}
	if e.VMs() != 1 {
		t.Errorf("a script's own throw discarded its VM: %d loaded, want 1", e.VMs())
	}
	_, err = e.Transform(context.Background(), script(`function transform(event) { return event.data.nope.deeper; }`), json.RawMessage(stripeInvoice), nil)
	if se := scriptErr(t, err, ReasonThrow); !strings.Contains(se.Message, "TypeError") {
		t.Errorf("error %q, want the TypeError", se)
	}
}

func TestThrownMessageIsCutToASize(t *testing.T) {
	e := newEngine(t, Config{})
	_, err := e.Transform(context.Background(), script(`function transform() { throw "€".repeat(100000); }`), json.RawMessage(`{}`), nil)
	se := scriptErr(t, err, ReasonThrow)
	if len(se.Message) > maxMessage+len("…") || !strings.HasSuffix(se.Message, "…") {
		t.Fatalf("message of %d bytes, want at most %d and cut", len(se.Message), maxMessage)
	}
}

func TestScriptThatDoesNotCompileIsInvalidAndNamesThePosition(t *testing.T) {
	e := newEngine(t, Config{})
	err := e.Check(context.Background(), "", KindTransform, "function transform(event) {\n  return event +;\n}")
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "line 2, column 17") {
		t.Fatalf("Check = %v, want EINVALID at line 2, column 17", err)
	}
	if !strings.Contains(intake.ErrorMessage(err), "SyntaxError") {
		t.Errorf("message %q, want the SyntaxError", intake.ErrorMessage(err))
	}
}

func TestScriptWithoutItsFunctionIsInvalid(t *testing.T) {
	e := newEngine(t, Config{})
	for kind, src := range map[Kind]string{
		KindTransform: `function transfrom(event) { return null; }`,
		KindInterpret: `var interpret = 42;`,
	} {
		err := e.Check(context.Background(), "", kind, src)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "does not define "+entry[kind]) {
			t.Errorf("Check(%s) = %v, want EINVALID naming %s", kind, err, entry[kind])
		}
	}
	if err := e.Check(context.Background(), "", KindTransform, `const transform = (event) => null;`); err != nil {
		t.Errorf("an arrow function bound to a const is a transform too: %v", err)
	}
}

func TestScriptThatFailsWhileLoadingIsInvalid(t *testing.T) {
	e := newEngine(t, Config{ScriptTimeout: 200 * time.Millisecond})
	for src, want := range map[string]string{
		`null.x; function transform() {}`:   "TypeError",
		`for(;;){} function transform() {}`: "time limit",
	} {
		err := e.Check(context.Background(), "", KindTransform, src)
		if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), want) {
			t.Errorf("Check(%q) = %v, want EINVALID naming %q", src, err, want)
		}
	}
	if e.VMs() != 0 {
		t.Errorf("checks left %d VMs alive", e.VMs())
	}
}

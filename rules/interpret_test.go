package rules

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

const acmeInterpret = `function interpret(request) {
  var body = request.json;
  if (!body || !Array.isArray(body.changes)) {
    throw new Error("not an acme payload");
  }
  return body.changes.map(function (c) {
    return {
      id: c.id,
      type: "acme." + c.what,
      kind: c.ping ? "change_notice" : undefined,
      occurred_at: c.at,
      data: {object: c.object, via: request.headers["x-acme-source"], tenant: request.query.tenant},
      object_ids: [c.object.id],
    };
  });
}`

func acmeRequest(body string) Request {
	h := http.Header{}
	h.Set("X-Acme-Source", "crm")
	h.Add("X-Acme-Source", "ignored second value")
	return NewRequest("POST", url.Values{"tenant": {"t1"}}, h, []byte(body))
}

func TestInterpretReturnsTheEventsItNames(t *testing.T) {
	e := newEngine(t, Config{})
	if err := e.Check(context.Background(), "", KindInterpret, acmeInterpret); err != nil {
		t.Fatal(err)
	}
	body := `{"changes": [
		{"id": "c1", "what": "deal.won", "at": "2026-11-30T10:00:00+01:00", "object": {"id": "d-9", "amount": 12}},
		{"id": "c2", "what": "deal.touched", "ping": true, "object": {"id": "d-10"}}
	]}`
	evs, err := e.Interpret(context.Background(), script(acmeInterpret), acmeRequest(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	first, second := evs[0], evs[1]
	if first.ProviderEventID != "c1" || first.Type != "acme.deal.won" || first.Kind != intake.KindEvent {
		t.Errorf("first event %+v", first)
	}
	if want := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC); !first.OccurredAt.Equal(want) {
		t.Errorf("occurred_at %v, want %v", first.OccurredAt, want)
	}
	if string(first.Data) != `{"object":{"id":"d-9","amount":12},"via":"crm","tenant":"t1"}` {
		t.Errorf("data %s", first.Data)
	}
	if len(first.ObjectIDs) != 1 || first.ObjectIDs[0] != "d-9" {
		t.Errorf("object ids %v", first.ObjectIDs)
	}
	if second.Kind != intake.KindChangeNotice || !second.OccurredAt.IsZero() {
		t.Errorf("second event %+v, want a change notice without occurred_at", second)
	}
}

func TestInterpretSeesTheRawBodyAndNullJSONForOtherBodies(t *testing.T) {
	e := newEngine(t, Config{})
	src := `function interpret(r) { return [{type: "form." + r.method.toLowerCase(), data: {raw: r.body, json: r.json}}]; }`
	evs, err := e.Interpret(context.Background(), script(src), NewRequest("PUT", nil, nil, []byte("a=1&b=2")))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != "form.put" || string(evs[0].Data) != `{"raw":"a=1&b=2","json":null}` {
		t.Fatalf("events %+v (%s)", evs, evs[0].Data)
	}
}

func TestInterpretValidatesEachEvent(t *testing.T) {
	e := newEngine(t, Config{})
	for ret, want := range map[string]string{
		`{type: "x"}`:                             "must return an array",
		`[{}]`:                                    "event 0: type is required",
		`[{type: "ok"}, {type: " "}]`:             "event 1: type is required",
		`[{type: "has space"}]`:                   "no spaces",
		`[{type: "x", kind: "alert"}]`:            "want event, change_notice or link_unfurl",
		`[{type: "x", occurred_at: "yesterday"}]`: "not an RFC 3339 time",
		`[{type: "x", object_ids: [42]}]`:         "object_ids[0] must be a non-empty string",
		`[{type: "x", id: 7}]`:                    "id must be a string",
		`[{type: "x", tpye: "y"}]`:                "unknown field",
		`[42]`:                                    "event 0: want an object",
		`[{type: "x", data: "y".repeat(70000)}]`:  "data is 70002 bytes, at most 65536",
		`Promise.resolve([])`:                     "Promise",
	} {
		src := `function interpret(request) { return ` + ret + `; }`
		_, err := e.Interpret(context.Background(), script(src), acmeRequest(`{}`))
		se := scriptErr(t, err, ReasonResult)
		if !strings.HasPrefix(se.Error(), "interpret_error: ") || !strings.Contains(se.Message, want) {
			t.Errorf("return %s: %q, want it to contain %q", ret, se, want)
		}
	}
	evs, err := e.Interpret(context.Background(), script(`function interpret() { return []; }`), acmeRequest(`{}`))
	if err != nil || len(evs) != 0 {
		t.Fatalf("no events: %v, %v", evs, err)
	}
}

func TestInterpretThatThrowsGivesTheJSMessage(t *testing.T) {
	e := newEngine(t, Config{})
	_, err := e.Interpret(context.Background(), script(acmeInterpret), acmeRequest(`[1,2]`))
	se := scriptErr(t, err, ReasonThrow)
	if !strings.HasPrefix(se.Error(), "interpret_error: Error: not an acme payload") {
		t.Fatalf("error %q", se)
	}
}

func TestInterpretAndTransformOfTheSameSourceAreSeparateVersions(t *testing.T) {
	e := newEngine(t, Config{})
	both := `function transform(e) { return {body: "t"}; } function interpret(r) { return [{type: "i"}]; }`
	out, err := e.Transform(context.Background(), script(both), []byte(`{}`), nil)
	if err != nil || string(out.Body) != "t" {
		t.Fatalf("transform: %v, %v", out, err)
	}
	evs, err := e.Interpret(context.Background(), script(both), acmeRequest(`{}`))
	if err != nil || len(evs) != 1 || evs[0].Type != "i" {
		t.Fatalf("interpret: %v, %v", evs, err)
	}
	if e.VMs() != 2 {
		t.Errorf("%d VMs, want one per kind", e.VMs())
	}
}

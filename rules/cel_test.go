package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// newEngine returns an engine for a test. Unless the test is about the time
// limit, it gets a generous one: the race detector slows QuickJS many times
// over, and on two busy cores a goroutine can wait longer than 50ms for a CPU.
func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	if cfg.ScriptTimeout == 0 {
		cfg.ScriptTimeout = 10 * time.Second
	}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func mustEvent(t testing.TB, raw string) map[string]any {
	t.Helper()
	ev, err := DecodeEvent([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

const stripeInvoice = `{"id":"01940000-0000-7000-8000-000000000001","type":"stripe.invoice.paid","kind":"event",
	"replay":false,"replay_of":null,
	"data":{"object":{"amount":250000,"currency":"eur","metadata":{"tenant":"acme"}}}}`

const githubPush = `{"id":"01940000-0000-7000-8000-000000000002","type":"github.push","kind":"event",
	"replay":false,"data":{"ref":"refs/heads/main","object":{"amount":5}}}`

func TestFilterExamplesFromTheDesign(t *testing.T) {
	e := newEngine(t, Config{})
	stripe := Input{Event: mustEvent(t, stripeInvoice)}
	replayed := Input{Event: mustEvent(t, strings.Replace(stripeInvoice, `"replay":false`, `"replay":true`, 1))}
	small := Input{Event: mustEvent(t, strings.Replace(stripeInvoice, "250000", "99999", 1))}
	noTenant := Input{Event: mustEvent(t, strings.Replace(stripeInvoice, `"tenant":"acme"`, `"other":"x"`, 1))}
	push := Input{Event: mustEvent(t, githubPush), Headers: map[string]string{"x-github-event": "push"}}
	pushOther := Input{Event: mustEvent(t, strings.Replace(githubPush, "refs/heads/main", "refs/heads/dev", 1)),
		Headers: map[string]string{"x-github-event": "push"}}
	issue := Input{Event: mustEvent(t, githubPush), Headers: map[string]string{"x-github-event": "issues"}}

	for _, tc := range []struct {
		filter string
		in     Input
		want   bool
	}{
		{`event.data.object.amount >= 100000`, stripe, true},
		{`event.data.object.amount >= 100000`, small, false},
		{`headers["x-github-event"] == "push" && event.data.ref == "refs/heads/main"`, push, true},
		{`headers["x-github-event"] == "push" && event.data.ref == "refs/heads/main"`, pushOther, false},
		{`headers["x-github-event"] == "push" && event.data.ref == "refs/heads/main"`, issue, false},
		{`event.type.startsWith("stripe.invoice.") && !event.replay`, stripe, true},
		{`event.type.startsWith("stripe.invoice.") && !event.replay`, replayed, false},
		{`event.type.startsWith("stripe.invoice.") && !event.replay`, push, false},
		{`has(event.data.object.metadata.tenant)`, stripe, true},
		{`has(event.data.object.metadata.tenant)`, noTenant, false},
		{`query["tenant"] == "acme"`, Input{Query: map[string]string{"tenant": "acme"}}, true},
		{`event.replay_of == null`, stripe, true},
	} {
		if err := e.Check(context.Background(), "", KindFilter, tc.filter); err != nil {
			t.Fatalf("Check(%s): %v", tc.filter, err)
		}
		got, err := e.Filter(context.Background(), tc.filter, tc.in)
		if err != nil {
			t.Fatalf("Filter(%s): %v", tc.filter, err)
		}
		if got != tc.want {
			t.Errorf("Filter(%s) on %v = %v, want %v", tc.filter, tc.in.Event["type"], got, tc.want)
		}
	}
}

func TestFilterThatDoesNotCompileIsInvalidAndNamesThePosition(t *testing.T) {
	e := newEngine(t, Config{})
	for _, tc := range []struct {
		filter, want string
	}{
		{`event.type ==`, "line 1, column 14"},
		{"event.type == \"a\" &&\n  evnt.data", "line 2, column 3: undeclared reference to 'evnt'"},
		{`event.type.startsWith(1)`, "line 1, column 22"},
	} {
		err := e.Check(context.Background(), "", KindFilter, tc.filter)
		if intake.ErrorCode(err) != intake.EINVALID {
			t.Fatalf("Check(%q) = %v, want EINVALID", tc.filter, err)
		}
		if msg := intake.ErrorMessage(err); !strings.Contains(msg, tc.want) || !strings.Contains(msg, " | ") {
			t.Errorf("Check(%q) message %q, want it to contain %q and the snippet", tc.filter, msg, tc.want)
		}
	}
}

func TestFilterKnownNotToReturnBoolIsInvalid(t *testing.T) {
	e := newEngine(t, Config{})
	for _, filter := range []string{`1 + 2`, `"yes"`, `headers["x"]`, `event.data.size()`} {
		err := e.Check(context.Background(), "", KindFilter, filter)
		if intake.ErrorCode(err) != intake.EINVALID {
			t.Fatalf("Check(%q) = %v, want EINVALID", filter, err)
		}
		if msg := intake.ErrorMessage(err); !strings.Contains(msg, "filter must return a bool, not ") || !strings.Contains(msg, ": "+filter+"; compare it") {
			t.Errorf("Check(%q) message %q, want it to say a bool is wanted, quote the filter and say to compare", filter, msg)
		}
	}
}

func TestFilterWhoseResultIsNotBoolAtRunTimeIsAnError(t *testing.T) {
	e := newEngine(t, Config{})
	in := Input{Event: mustEvent(t, stripeInvoice)}
	if err := e.Check(context.Background(), "", KindFilter, `event.data.object.currency`); err != nil {
		t.Fatalf("a dyn result is only known at run time, Check: %v", err)
	}
	_, err := e.Filter(context.Background(), `event.data.object.currency`, in)
	if err == nil || !strings.Contains(err.Error(), "want bool") {
		t.Fatalf("Filter returning a string: %v, want an error naming bool", err)
	}
}

func TestFilterRuntimeErrorIsAnErrorNotAMatch(t *testing.T) {
	e := newEngine(t, Config{})
	in := Input{Event: mustEvent(t, githubPush)}
	ok, err := e.Filter(context.Background(), `headers["x-github-event"] == "push"`, in)
	if err == nil || ok {
		t.Fatalf("missing header: %v, %v; want an error and false", ok, err)
	}
	if !strings.Contains(err.Error(), "no such key") {
		t.Errorf("error %q, want it to name the missing key", err)
	}
	ok, err = e.Filter(context.Background(), `headers[?"x-github-event"].orValue("") == "push"`, in)
	if err != nil || ok {
		t.Fatalf("optional lookup of a missing header: %v, %v; want false without error", ok, err)
	}
}

// cel-go's cost tracking itself slows down with the length of a
// comprehension, so over a long list the time limit may come first; either
// stops it.
func TestFilterOverAHugeListStopsAtItsLimit(t *testing.T) {
	e := newEngine(t, Config{CostLimit: 100_000, ScriptTimeout: DefaultScriptTimeout})
	items := make([]any, 20_000)
	for i := range items {
		items[i] = float64(i)
	}
	in := Input{Event: map[string]any{"data": map[string]any{"items": items}}}
	for _, expr := range []string{
		`event.data.items.all(x, event.data.items.exists(y, y == x + 1.0) || x == 19999.0)`,
		`event.data.items.all(x, x >= 0.0)`,
	} {
		if err := e.Check(context.Background(), "", KindFilter, expr); err != nil {
			t.Fatal(err)
		}
		_, err := e.Filter(context.Background(), expr, in)
		if err == nil || !strings.Contains(err.Error(), "cost limit") && !strings.Contains(err.Error(), "time limit") {
			t.Fatalf("%s over 20 000 items: %v, want the cost or the time limit", expr, err)
		}
	}
}

func TestFilterStopsWhenTheCallerGivesUp(t *testing.T) {
	e := newEngine(t, Config{CostLimit: 1 << 62})
	items := make([]any, 5_000)
	for i := range items {
		items[i] = float64(i)
	}
	in := Input{Event: map[string]any{"data": map[string]any{"items": items}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Filter(ctx, `event.data.items.all(x, event.data.items.all(y, y >= 0.0))`, in)
	if err != context.Canceled {
		t.Fatalf("cancelled filter: %v, want context.Canceled", err)
	}
}

func TestOrderingKeyReturnsAStringAndRefusesOtherTypes(t *testing.T) {
	e := newEngine(t, Config{})
	in := Input{Event: mustEvent(t, stripeInvoice)}
	key, err := e.Key(context.Background(), `event.data.object.metadata.tenant + "/" + event.data.object.currency`, in)
	if err != nil || key != "acme/eur" {
		t.Fatalf("Key = %q, %v; want acme/eur", key, err)
	}
	err = e.Check(context.Background(), "", KindKey, `event.data.object.amount > 1`)
	if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), "key must return a string, not bool") {
		t.Fatalf("Check of a bool key: %v, want EINVALID naming string", err)
	}
	if _, err := e.Key(context.Background(), `event.data.object.amount`, in); err == nil || !strings.Contains(err.Error(), "want string") {
		t.Fatalf("Key returning a number at run time: %v, want an error naming string", err)
	}
}

func TestCompiledProgramsAreCachedWithinTheirBound(t *testing.T) {
	e := newEngine(t, Config{MaxPrograms: 10})
	in := Input{Event: mustEvent(t, stripeInvoice)}
	for i := range 100 {
		expr := fmt.Sprintf("event.data.object.amount >= %d", i%50)
		if _, err := e.Filter(context.Background(), expr, in); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.cel.size(); n != 10 {
		t.Fatalf("cache holds %d programs, want its bound of 10", n)
	}
	p1, _ := e.cel.program(KindFilter, `true`)
	p2, _ := e.cel.program(KindFilter, `true`)
	if p1 != p2 {
		t.Error("the same source compiled twice instead of coming from the cache")
	}
}

func TestEmptyOrOversizedRuleIsInvalid(t *testing.T) {
	e := newEngine(t, Config{MaxSource: 100})
	for _, src := range []string{"", "   ", strings.Repeat("true && ", 20) + "true"} {
		if err := e.Check(context.Background(), "", KindFilter, src); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("Check(%q) = %v, want EINVALID", src, err)
		}
	}
	if err := e.Check(context.Background(), "", "lua", "x"); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("Check of an unknown kind = %v, want EINVALID", err)
	}
}

func TestDecodeEventRefusesWhatIsNotOneObject(t *testing.T) {
	for _, raw := range []string{``, `null`, `[1]`, `{"a":1} {"b":2}`, `{"a":`} {
		if _, err := DecodeEvent([]byte(raw)); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("DecodeEvent(%q) = %v, want EINVALID", raw, err)
		}
	}
}

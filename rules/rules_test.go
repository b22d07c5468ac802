package rules

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit/clock"
)

func newTestEngine(t *testing.T) *Engine {
	t.Helper()
	// Each read of the clock moves it on 3 ms, so a dry run's duration is
	// known without measuring anything.
	c := clock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	c.Tick(3 * time.Millisecond)
	e, err := New(Config{ScriptTimeout: 10 * time.Second}, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestDryRunOfEachKind(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	in := TestInput{EventJSON: json.RawMessage(stripeInvoice), Context: map[string]string{"app": "billing"}}

	res, err := e.Test(ctx, KindFilter, `event.data.object.amount >= 100000`, in)
	if err != nil || res.Result != true || res.Error != "" || res.Duration != 3*time.Millisecond {
		t.Errorf("filter dry run: %+v, %v", res, err)
	}
	res, err = e.Test(ctx, KindKey, `event.data.object.metadata.tenant`, in)
	if err != nil || res.Result != "acme" {
		t.Errorf("key dry run: %+v, %v", res, err)
	}
	decoded := TestInput{Input: Input{Event: mustEvent(t, stripeInvoice)}}
	res, err = e.Test(ctx, KindTransform, `function transform(e) { return {body: e.data.object.currency}; }`, decoded)
	if err != nil || res.Output != "eur" {
		t.Errorf("transform dry run on a decoded event: %+v, %v", res, err)
	}
	res, err = e.Test(ctx, KindTransform, reshape, in)
	if err != nil || res.Error != "" || !strings.Contains(res.Output, "Invoice paid: 2500 EUR") {
		t.Errorf("transform dry run: %+v, %v", res, err)
	}
	shown, _ := json.Marshal(res)
	if !strings.Contains(string(shown), `"result":{"skip":false,"body":{"text":"Invoice paid: 2500 EUR","to":"billing"},"headers":{"Content-Type":["application/json"],"X-Tenant":["acme"]}}`) {
		t.Errorf("transform dry run as JSON: %s", shown)
	}
	res, err = e.Test(ctx, KindInterpret, acmeInterpret, TestInput{Request: acmeRequest(`{"changes": [{"id": "c1", "what": "x", "object": {"id": "o"}}]}`)})
	if evs, ok := res.Result.([]Event); err != nil || !ok || len(evs) != 1 || evs[0].Type != "acme.x" {
		t.Errorf("interpret dry run: %+v, %v", res, err)
	}
}

func TestDryRunReportsARuleThatFailsOnTheInput(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.Test(context.Background(), KindTransform, `function transform() { throw new Error("bad"); }`, TestInput{EventJSON: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Error, "transform_error: Error: bad") || res.Result != nil {
		t.Errorf("dry run of a throwing transform: %+v", res)
	}
	res, err = e.Test(context.Background(), KindFilter, `event.data.missing > 1`, TestInput{EventJSON: json.RawMessage(`{"data":{}}`)})
	if err != nil || res.Result != false || !strings.Contains(res.Error, "no such key") {
		t.Errorf("dry run of a failing filter: %+v, %v", res, err)
	}
}

func TestDryRunOfARuleThatDoesNotCompileIsInvalid(t *testing.T) {
	e := newTestEngine(t)
	for kind, src := range map[Kind]string{KindFilter: `event.type ==`, KindTransform: `function transform( {`, KindInterpret: `1`} {
		if _, err := e.Test(context.Background(), kind, src, TestInput{}); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("dry run of a bad %s: %v, want EINVALID", kind, err)
		}
	}
	if _, err := e.Test(context.Background(), KindFilter, `true`, TestInput{EventJSON: json.RawMessage(`[1]`)}); intake.ErrorCode(err) != intake.EINVALID {
		t.Errorf("dry run on an event that is not an object: %v, want EINVALID", err)
	}
}

func TestDryRunSharesNoStateAndKeepsNoVM(t *testing.T) {
	e := newTestEngine(t)
	for range 3 {
		res, err := e.Test(context.Background(), KindTransform, counter, TestInput{EventJSON: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != "1" {
			t.Fatalf("a dry run counted %s, want 1: it saw an earlier run's state", res.Output)
		}
	}
	if e.VMs() != 0 {
		t.Fatalf("dry runs left %d VMs alive", e.VMs())
	}
	if got := count(t, e, script(counter)); got != "1" {
		t.Fatalf("the organisation's first call counted %s, want 1: it saw the dry runs' state", got)
	}
}

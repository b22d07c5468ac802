package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func consumerReq(filter, transform string) api.CreateConsumerRequest {
	return api.CreateConsumerRequest{Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks",
		EventTypes: []string{"stripe.*"}, Filter: filter, Transform: transform}
}

func TestAConsumerRuleThatDoesNotCompileIsRefusedWithItsPositionAndNothingIsSaved(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	for name, c := range map[string]struct {
		req  api.CreateConsumerRequest
		want string
	}{
		"filter syntax":     {consumerReq(`event.data.object.amount >=`, ""), "line 1, column 28"},
		"filter not a bool": {consumerReq(`"hello"`, ""), "bool"},
		"transform syntax":  {consumerReq("", "function transform(event) { return {body: }"), "line"},
		"no transform()":    {consumerReq("", "function other(event) { return null }"), "transform"},
	} {
		rec := e.do("POST", "/api/v1/consumers", acme.org.APIKey, c.req)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", name, rec.Code, rec.Body.String(), c.want)
		}
	}
	if cs, _ := e.store.ListConsumers(context.Background(), intake.Scope{}); len(cs) != 0 {
		t.Fatalf("%d consumers saved from bad rules", len(cs))
	}
}

// event is the envelope, typed field by field: event.type is a string, and
// a filter returning it would have every event filtered at run time.
func TestAFilterReturningAStringIsRefusedByPatchAndNothingIsSaved(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, consumerReq(`event.type == "a"`, ""))
	before := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	bad := `event.type`
	wantError(t, e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, api.UpdateConsumerRequest{Filter: &bad}), 400, intake.EINVALID,
		`filter must return a bool, not string: event.type; compare it, e.g. event.type == "value"`)
	if got := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil); got.Filter != `event.type == "a"` {
		t.Fatalf("a refused update changed the filter to %q", got.Filter)
	}
	if after := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil); len(after.Items) != len(before.Items) {
		t.Fatalf("a refused update was audited: %+v", after.Items[0])
	}
	rec := e.do("POST", "/api/v1/consumers", acme.org.APIKey, consumerReq(`event.type`, ""))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "filter must return a bool, not string") {
		t.Fatalf("create with filter event.type: %d %s, want 400", rec.Code, rec.Body.String())
	}
}

func TestRuleChangesAreReturnedAndAuditedWithTheOldAndNewSource(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	for _, f := range []string{
		`event.data.object.amount >= 100000`,
		`headers["x-github-event"] == "push" && event.data.ref == "refs/heads/main"`,
		`event.type.startsWith("stripe.invoice.") && !event.replay`,
		`has(event.data.object.metadata.tenant)`,
	} {
		c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, consumerReq(f, ""))
		if c.Filter != f {
			t.Fatalf("created with filter %q, shows %q", f, c.Filter)
		}
	}
	c := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, consumerReq(`event.type == "a"`, ""))
	filter, transform := `event.type == "b"`, `function transform(event) { return {body: {t: event.type}} }`
	must[api.Consumer](e, 200, "PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, api.UpdateConsumerRequest{Filter: &filter, Transform: &transform})
	got := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil)
	if got.Filter != filter || got.Transform != transform || !got.Enabled {
		t.Fatalf("consumer = %+v", got)
	}
	audit := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	a := audit.Items[0]
	if a.Action != "consumer.update" || !strings.Contains(a.Detail, `filter: "event.type == \"a\"" → "event.type == \"b\""`) ||
		!strings.Contains(a.Detail, `transform: "" → "function transform`) {
		t.Fatalf("audit = %+v", a)
	}
	bad := `event.type ==`
	wantError(t, e.do("PATCH", "/api/v1/consumers/"+c.ID, acme.org.APIKey, api.UpdateConsumerRequest{Filter: &bad}), 400, intake.EINVALID, "filter")
	if got := must[api.Consumer](e, 200, "GET", "/api/v1/consumers/"+c.ID, acme.org.APIKey, nil); got.Filter != filter {
		t.Fatalf("a refused update changed the filter to %q", got.Filter)
	}
}

func TestADryRunTriesARuleAgainstAStoredEventAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	ev := e.event(acme, "test.invoice.paid")
	snapshot := func() string {
		ctx := context.Background()
		audit, _ := e.store.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{})
		msgs, _ := e.store.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{})
		got, _ := e.store.Event(ctx, intake.Scope{}, ev.ID)
		ds, _ := e.store.Deliveries(ctx, intake.Scope{}, ev.ID)
		return fmt.Sprint(len(audit.Items), len(msgs.Items), got.State, got.Attempt, len(ds))
	}
	before := snapshot()
	res := must[api.RuleTestResult](e, 200, "POST", "/api/v1/rules/test", acme.org.APIKey,
		api.RuleTestRequest{Kind: "filter", Source: `event.type.endsWith(".paid")`, EventID: ev.ID})
	if res.Result != true || res.Error != "" || res.DurationMS < 0 {
		t.Fatalf("filter dry run = %+v", res)
	}
	res = must[api.RuleTestResult](e, 200, "POST", "/api/v1/rules/test", acme.org.APIKey,
		api.RuleTestRequest{Kind: "transform", Source: `function transform(event) { return {body: {id: event.id}} }`, EventID: ev.ID})
	if !strings.Contains(res.Output, ev.ID) || res.Error != "" {
		t.Fatalf("transform dry run = %+v", res)
	}
	res = must[api.RuleTestResult](e, 200, "POST", "/api/v1/rules/test", acme.org.APIKey,
		api.RuleTestRequest{Kind: "transform", Source: `function transform(event) { throw new Error("boom") }`, Event: []byte(`{"id":"x","type":"t"}`)})
	if res.Error != "transform_error: Error: boom" && !strings.Contains(res.Error, "boom") {
		t.Fatalf("throwing dry run = %+v", res)
	}
	wantError(t, e.do("POST", "/api/v1/rules/test", acme.org.APIKey, api.RuleTestRequest{Kind: "filter", Source: `event.`, EventID: ev.ID}),
		400, intake.EINVALID, "line 1, column 7")
	// Another org's event does not exist for this key.
	wantError(t, e.do("POST", "/api/v1/rules/test", globex.org.APIKey, api.RuleTestRequest{Kind: "filter", Source: `true`, EventID: ev.ID}),
		404, intake.ENOTFOUND, "not found")
	if after := snapshot(); after != before {
		t.Fatalf("a dry run changed the store: %s, then %s", before, after)
	}
}

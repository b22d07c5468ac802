package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// An Okta connection may name the header its hook authenticates with; a
// consumer's filter and transform never see it, whether the settle plans
// the fan-out or the router claims the event.
func TestAConsumersRulesNeverSeeTheHeaderItsConnectionNamesAsACredential(t *testing.T) {
	const secret = "okta-shared-value-0123456789"
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) {
			e := setup(t)
			e.conn = intake.Connection{ID: intake.NewID(), OrgID: e.org.ID, Provider: "okta", Name: "okta",
				Config: json.RawMessage(`{"auth_header": "X-Hook-Key"}`), CreatedAt: e.clock.Now()}
			if err := e.store.CreateConnection(context.Background(), e.conn); err != nil {
				t.Fatal(err)
			}
			rec, url := newRecorder(t, 200)
			c, _ := e.consumer(t, "app", url, false, "okta.*")
			e.withRules(t, c, `headers["x-request-id"] == "r-1" && !("x-hook-key" in headers)`,
				`function transform(event, context) { return {body: context.headers} }`)
			e.header = http.Header{"X-Hook-Key": {secret}, "X-Request-Id": {"r-1"}}
			e.planned = planned
			id := e.event(t, "okta.user.session.start")
			e.run(t)
			if ev, _ := e.get(t, id); ev.State != intake.EventDelivered || rec.calls() != 1 {
				t.Fatalf("event %s after %d calls: the filter saw the credential header, or not the others", ev.State, rec.calls())
			}
			rec.mu.Lock()
			body := string(rec.bodies[0])
			rec.mu.Unlock()
			if strings.Contains(body, secret) || !strings.Contains(body, "r-1") {
				t.Fatalf("the transform's context.headers: %s", body)
			}
		})
	}
}

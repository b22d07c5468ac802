package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// Each page shows a role the forms it may use and none of the others: a
// viewer reads, an operator also replays, re-routes, pauses and tests, an
// admin also edits. The badge names the role.
func TestEachRoleSeesTheFormsItMayUseAndNoOthers(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	c := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"stripe.customer.*"}, Filter: `event.type != "stripe.customer.deleted"`})
	m := e.send(acme, "invoice.paid")
	deadEvent(t, e, m.EventIDs[0]) // re-routable
	e.sendDead(acme)
	keys := map[intake.Role]string{intake.RoleAdmin: acme.org.APIKey}
	for _, r := range []intake.Role{intake.RoleViewer, intake.RoleOperator} {
		keys[r] = apiCall[api.APIKey](e, acme.org.APIKey, "POST", "/api/v1/keys", api.CreateKeyRequest{Role: string(r)}).Key
	}

	forms := []struct {
		page, marker string
		need         intake.Role
	}{
		{"/console/messages/" + m.ID, `action="/console/messages/` + m.ID + `/replay"`, intake.RoleOperator},
		{"/console/events/" + m.EventIDs[0], `action="/console/events/` + m.EventIDs[0] + `/reroute"`, intake.RoleOperator},
		{"/console/dead", `id="replay-dead"`, intake.RoleOperator},
		{"/console/consumers/" + c.ID, `action="/console/consumers/` + c.ID + `/pause"`, intake.RoleOperator},
		{"/console/consumers/" + c.ID, `id="test-consumer"`, intake.RoleOperator},
		{"/console/consumers/" + c.ID, `id="test-rules"`, intake.RoleOperator},
		{"/console/consumers/" + c.ID, `action="/console/consumers/` + c.ID + `/enabled"`, intake.RoleAdmin},
		{"/console/consumers/" + c.ID, `id="settings-form"`, intake.RoleAdmin},
		{"/console/consumers/" + c.ID, `id="controls-form"`, intake.RoleAdmin},
		{"/console/consumers/" + c.ID, `id="rotate-secret"`, intake.RoleAdmin},
		{"/console/consumers/" + c.ID, `id="save-rules"`, intake.RoleAdmin},
		{"/console/consumers", `id="create-consumer"`, intake.RoleAdmin},
		{"/console/connections", `id="create-connection"`, intake.RoleAdmin},
		{"/console/connections", `action="/console/connections/` + acme.conn.ID + `/disable"`, intake.RoleAdmin},
		{"/console/connections/" + acme.conn.ID, `id="test-rules"`, intake.RoleOperator},
		{"/console/connections/" + acme.conn.ID, `id="save-rules"`, intake.RoleAdmin},
		{"/console/endpoints", `id="create-endpoint"`, intake.RoleAdmin},
		{"/console/endpoints", `action="/console/endpoints/` + acme.ep.ID + `/enabled"`, intake.RoleAdmin},
		{"/console/endpoints", `action="/console/endpoints/` + acme.ep.ID + `/rotate"`, intake.RoleAdmin},
		{"/console/notifications", `id="save-notifications"`, intake.RoleAdmin},
	}
	for _, role := range intake.Roles {
		b := e.browser()
		b.signIn(keys[role])
		pages := map[string]string{}
		for _, f := range forms {
			if _, ok := pages[f.page]; !ok {
				p := b.get(f.page)
				wantStatus(t, p, http.StatusOK)
				pages[f.page] = p.body
			}
			if shown := strings.Contains(pages[f.page], f.marker); shown != role.Allows(f.need) {
				t.Errorf("a %s on %s: %s shown %v, want %v", role, f.page, f.marker, shown, role.Allows(f.need))
			}
		}
		if !strings.Contains(pages["/console/consumers/"+c.ID], "acme · "+string(role)) {
			t.Errorf("a %s's badge does not name the role", role)
		}
		// What a form would have edited is still shown to read.
		consumer := pages["/console/consumers/"+c.ID]
		for _, want := range []string{"http://127.0.0.1:9/crm", "stripe.customer.*", "stripe.customer.deleted"} {
			if !strings.Contains(consumer, want) {
				t.Errorf("a %s's consumer page does not show %s", role, want)
			}
		}
	}
}

// A form a page did not show is refused by the server all the same: the
// control plane judges the role, not the page.
func TestTheConsoleRefusesAFormTheRoleMayNotUse(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	c := apiCall[api.Consumer](e, acme.org.APIKey, "POST", "/api/v1/consumers", api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"stripe.*"}})
	m := e.send(acme, "invoice.paid")
	key := func(r intake.Role) string {
		return apiCall[api.APIKey](e, acme.org.APIKey, "POST", "/api/v1/keys", api.CreateKeyRequest{Role: string(r)}).Key
	}
	viewer, operator := e.browser(), e.browser()
	viewer.signIn(key(intake.RoleViewer))
	operator.signIn(key(intake.RoleOperator))

	before := len(e.messages(acme))
	p := viewer.post("/console/messages/"+m.ID+"/replay", url.Values{"csrf": {viewer.csrf()}})
	wantStatus(t, p, http.StatusForbidden)
	if !strings.Contains(p.body, "Not allowed") || !strings.Contains(p.body, "needs the operator role") {
		t.Fatalf("the refusal does not say why: %.600s", p.body)
	}
	if n := len(e.messages(acme)); n != before {
		t.Fatalf("a viewer's replay made a message: %d, was %d", n, before)
	}
	wantStatus(t, operator.post("/console/messages/"+m.ID+"/replay", url.Values{"csrf": {operator.csrf()}}), http.StatusSeeOther)
	// An operator tries a rule (the form it is shown); saving it is refused.
	rule := url.Values{"csrf": {operator.csrf()}, "filter": {`event.type == "stripe.invoice.paid"`}, "event": {m.EventIDs[0]}}
	if p := operator.post("/console/consumers/"+c.ID+"/test", rule); p.status != http.StatusOK || !strings.Contains(p.body, `<pre class="mono small result">true</pre>`) {
		t.Fatalf("an operator's rules test: %d %.400s", p.status, p.body)
	}
	wantStatus(t, operator.post("/console/consumers/"+c.ID+"/rules", rule), http.StatusForbidden)

	for path, form := range map[string]url.Values{
		"/console/consumers/" + c.ID + "/settings":      {"name": {"taken"}, "url": {"http://127.0.0.1:9/x"}, "event_types": {"*"}},
		"/console/consumers/" + c.ID + "/enabled":       {"enabled": {"false"}},
		"/console/consumers/" + c.ID + "/rotate-secret": {"keep_old_for": {"0s"}},
		"/console/consumers":                            {"name": {"new"}, "app": {"a"}, "url": {"http://127.0.0.1:9/n"}, "event_types": {"*"}},
	} {
		form.Set("csrf", operator.csrf())
		if p := operator.post(path, form); p.status != http.StatusForbidden || !strings.Contains(p.body, "needs the admin role") {
			t.Errorf("an operator's POST %s: %d %.300s, want 403 naming the admin role", path, p.status, p.body)
		}
	}
	got, err := e.store.Consumer(context.Background(), intake.Scope{OrgID: acme.org.ID}, c.ID)
	if err != nil || got.Name != "crm" || !got.Enabled || got.Version != 1 {
		t.Fatalf("the refused forms changed the consumer: %+v %v", got, err)
	}
}

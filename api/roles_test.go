package api_test

import (
	"net/http"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// A key is minted with a role and listed with it. A viewer's key reads
// (200) and is refused a replay (403 forbidden, naming the role it needs);
// an operator's replays but may not register a consumer or mint a key.
func TestAViewerKeyReadsAndIsRefusedAReplayAnOperatorsReplaysButDoesNotConfigure(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	m := e.ingest(acme, "", http.Header{"Content-Type": {"application/json"}}, `{"id":"evt_1"}`)
	viewer := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "viewer"})
	operator := must[api.APIKey](e, 201, "POST", "/api/v1/keys", staffToken, api.CreateKeyRequest{OrgID: acme.org.ID, Role: "operator"})
	admin := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{})
	if viewer.Role != "viewer" || operator.Role != "operator" || admin.Role != "admin" {
		t.Fatalf("minted roles: %q %q %q, want viewer, operator and admin (the default)", viewer.Role, operator.Role, admin.Role)
	}
	keys := must[api.List[api.APIKey]](e, 200, "GET", "/api/v1/keys", acme.org.APIKey, nil)
	roles := map[string]string{}
	for _, k := range keys.Items {
		roles[k.ID] = k.Role
	}
	if len(keys.Items) != 4 || roles[viewer.ID] != "viewer" || roles[operator.ID] != "operator" || roles[keys.Items[0].ID] != "admin" {
		t.Fatalf("the list's roles: %+v", keys.Items)
	}
	wantError(t, e.do("POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "owner"}), 400, intake.EINVALID,
		"role must be viewer, operator or admin")

	for _, path := range []string{"/api/v1/messages", "/api/v1/messages/" + m.ID, "/api/v1/events", "/api/v1/consumers",
		"/api/v1/connections", "/api/v1/audit", "/api/v1/export"} {
		if rec := e.do("GET", path, viewer.Key, nil); rec.Code != 200 {
			t.Errorf("a viewer's GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	replay := "/api/v1/messages/" + m.ID + "/replay"
	wantError(t, e.do("POST", replay, viewer.Key, nil), 403, intake.EFORBIDDEN, "needs the operator role")
	wantError(t, e.do("GET", "/api/v1/keys", viewer.Key, nil), 403, intake.EFORBIDDEN, "needs the admin role")
	if page := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages", acme.org.APIKey, nil); len(page.Items) != 1 {
		t.Fatalf("a refused replay made a message: %d messages", len(page.Items))
	}

	if rec := e.do("POST", replay, operator.Key, nil); rec.Code != 201 {
		t.Fatalf("an operator's replay: %d %s", rec.Code, rec.Body)
	}
	wantError(t, e.do("POST", "/api/v1/consumers", operator.Key, api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"*"}}), 403, intake.EFORBIDDEN, "needs the admin role")
	wantError(t, e.do("POST", "/api/v1/keys", operator.Key, api.CreateKeyRequest{Role: "admin"}), 403, intake.EFORBIDDEN, "needs the admin role")
	if rec := e.do("POST", "/api/v1/consumers", admin.Key, api.CreateConsumerRequest{Name: "crm", App: "crm",
		URL: "http://127.0.0.1:9/crm", EventTypes: []string{"*"}}); rec.Code != 201 {
		t.Fatalf("a new admin key's consumer: %d %s", rec.Code, rec.Body)
	}
}

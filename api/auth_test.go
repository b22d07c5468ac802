package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestRequestsWithoutAValidTokenAre401(t *testing.T) {
	e := newEnv(t)
	e.newTenant("acme")
	for _, auth := range []string{"", "Bearer", "Bearer ", "Basic c3RhZmY6eA==", "Bearer wrong-token", "Bearer " + staffToken + "x", staffToken} {
		for _, path := range []string{"/api/v1/orgs", "/api/v1/connections", "/api/v1/messages"} {
			req := httptest.NewRequest("GET", path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			wantError(t, rec, 401, intake.EUNAUTHORIZED, "token")
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%q on %s: 401 without WWW-Authenticate", auth, path)
			}
		}
	}
}

func TestOrgKeysCannotUseStaffOnlyRoutes(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	wantError(t, e.do("POST", "/api/v1/orgs", acme.org.APIKey, api.CreateOrgRequest{Name: "evil"}), 403, intake.EFORBIDDEN, "staff")
	orgs := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", staffToken, nil)
	if len(orgs.Items) != 1 {
		t.Fatalf("an org key created an org: %+v", orgs.Items)
	}
}

func TestOrgKeySeesOnlyItsOwnOrg(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	acmeMsg := e.ingest(acme, "", http.Header{"Content-Type": {"application/json"}}, `{"acme":1}`)
	globexMsg := e.ingest(globex, "", http.Header{"Content-Type": {"application/json"}}, `{"globex":1}`)
	key := acme.org.APIKey

	// Lists hold the org's own rows and none of the other's.
	if got := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", key, nil).Items; len(got) != 1 || got[0].ID != acme.org.ID || got[0].APIKey != "" {
		t.Errorf("orgs seen by acme's key: %+v", got)
	}
	if got := must[api.List[api.Connection]](e, 200, "GET", "/api/v1/connections", key, nil).Items; len(got) != 1 || got[0].ID != acme.conn.ID {
		t.Errorf("connections seen by acme's key: %+v", got)
	}
	if got := must[api.List[api.Endpoint]](e, 200, "GET", "/api/v1/endpoints", key, nil).Items; len(got) != 1 || got[0].ID != acme.ep.ID {
		t.Errorf("endpoints seen by acme's key: %+v", got)
	}
	if got := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages", key, nil).Items; len(got) != 1 || got[0].ID != acmeMsg.ID {
		t.Errorf("messages seen by acme's key: %+v", got)
	}
	if got := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages?endpoint_id="+globex.ep.ID, key, nil).Items; len(got) != 0 {
		t.Errorf("acme's key listed globex's endpoint's messages: %+v", got)
	}

	// Another org's rows are not found, not forbidden: their existence is not revealed.
	for _, path := range []string{
		"/api/v1/connections/" + globex.conn.ID,
		"/api/v1/endpoints/" + globex.ep.ID,
		"/api/v1/messages/" + globexMsg.ID,
		"/api/v1/messages/" + globexMsg.ID + "/body",
	} {
		wantError(t, e.do("GET", path, key, nil), 404, intake.ENOTFOUND, "not found")
	}
	wantError(t, e.do("POST", "/api/v1/messages/"+globexMsg.ID+"/body-url", key, nil), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("PATCH", "/api/v1/endpoints/"+globex.ep.ID, key, `{"enabled":false}`), 404, intake.ENOTFOUND, "not found")
	wantError(t, e.do("POST", "/api/v1/endpoints", key, api.CreateEndpointRequest{ConnectionID: globex.conn.ID}), 404, intake.ENOTFOUND, "not found")
	if ep := must[api.Endpoint](e, 200, "GET", "/api/v1/endpoints/"+globex.ep.ID, staffToken, nil); !ep.Enabled {
		t.Error("acme's key disabled globex's endpoint")
	}

	// An org key creates in its own org only.
	wantError(t, e.do("POST", "/api/v1/connections", key, api.CreateConnectionRequest{
		OrgID: globex.org.ID, Provider: testProvider, Name: "sneaky", Secrets: []string{"s"},
	}), 403, intake.EFORBIDDEN, "own org")
	own := must[api.Connection](e, 201, "POST", "/api/v1/connections", key, api.CreateConnectionRequest{
		OrgID: acme.org.ID, Provider: testProvider, Name: "second", Secrets: []string{"s"},
	})
	if own.OrgID != acme.org.ID {
		t.Errorf("connection made in org %s, want acme's", own.OrgID)
	}

	// Staff sees both orgs.
	if got := must[api.List[api.Message]](e, 200, "GET", "/api/v1/messages", staffToken, nil).Items; len(got) != 2 {
		t.Errorf("staff sees %d messages, want 2", len(got))
	}
	if got := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", staffToken, nil).Items; len(got) != 2 {
		t.Errorf("staff sees %d orgs, want 2", len(got))
	}
	must[api.MessageDetail](e, 200, "GET", "/api/v1/messages/"+globexMsg.ID, staffToken, nil)
}

func TestStaffMustNameAnExistingOrg(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.do("POST", "/api/v1/connections", staffToken, api.CreateConnectionRequest{
		Provider: testProvider, Name: "x", Secrets: []string{"s"},
	}), 400, intake.EINVALID, "org_id is required")
	wantError(t, e.do("POST", "/api/v1/connections", staffToken, api.CreateConnectionRequest{
		OrgID: intake.NewID(), Provider: testProvider, Name: "x", Secrets: []string{"s"},
	}), 404, intake.ENOTFOUND, "not found")
}

func TestOrgAPIKeyIsShownOnceAndOnlyItsHashStored(t *testing.T) {
	e := newEnv(t)
	org := must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "acme"})
	if len(org.APIKey) < 3+22 || org.APIKey[:3] != "ik_" {
		t.Fatalf("api key %q: want ik_ and at least 128 bits", org.APIKey)
	}
	if got := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", org.APIKey, nil).Items; len(got) != 1 || got[0].ID != org.ID {
		t.Fatalf("the new key does not authenticate as its org: %+v", got)
	}
	if rec := e.do("GET", "/api/v1/orgs", staffToken, nil); contains(rec.Body.String(), org.APIKey) {
		t.Error("the org list shows the api key")
	}
	if contains(string(e.dbBytes()), org.APIKey) {
		t.Error("the api key is stored in plaintext")
	}
}

package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// TestStaffRenameAnOrgOverItsETagAndATakenNameIs409: staff rename an org
// with PATCH {name}, over the version its read answered; a stale If-Match
// is 412, a name another org has is 409 (on create too, so `intake apply`
// never meets two orgs of one name), and an org's own key may not rename.
func TestStaffRenameAnOrgOverItsETagAndATakenNameIs409(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	e.newTenant("beta")
	path := "/api/v1/orgs/" + acme.org.ID
	patch := func(tok, etag, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("PATCH", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if etag != "" {
			req.Header.Set("If-Match", etag)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	read := e.do("GET", path, acme.org.APIKey, nil)
	if read.Code != http.StatusOK || read.Header().Get("ETag") != `"1"` || !strings.Contains(read.Body.String(), `"acme"`) {
		t.Fatalf("GET own org: %d, ETag %q: %s", read.Code, read.Header().Get("ETag"), read.Body)
	}
	wantError(t, patch(acme.org.APIKey, "", `{"name":"mine"}`), http.StatusForbidden, intake.EFORBIDDEN, "rename")
	wantError(t, patch(staffToken, "", `{"name":"beta"}`), http.StatusConflict, intake.ECONFLICT, `an org named "beta" exists already`)
	wantError(t, e.do("POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "beta"}), http.StatusConflict, intake.ECONFLICT, `"beta"`)
	wantError(t, patch(staffToken, "", `{"name":" "}`), http.StatusBadRequest, intake.EINVALID, "name is required")

	rec := patch(staffToken, `"1"`, `{"name":"acme corp"}`)
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"2"` || !strings.Contains(rec.Body.String(), `"name":"acme corp"`) {
		t.Fatalf("rename over version 1: %d, ETag %q: %s", rec.Code, rec.Header().Get("ETag"), rec.Body)
	}
	wantError(t, patch(staffToken, `"1"`, `{"retention":"2h"}`), http.StatusPreconditionFailed, intake.EVERSION, "changed since version 1")
	if rec := patch(acme.org.APIKey, `"2"`, `{"retention":"2h"}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"3"` {
		t.Fatalf("the org's own retention over version 2: %d %s", rec.Code, rec.Body)
	}
	list := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", staffToken, nil)
	if len(list.Items) != 2 || list.Items[0].Name == list.Items[1].Name {
		t.Fatalf("orgs after the refused create: %+v", list.Items)
	}
	// The old name is free again.
	must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "acme"})
}

// TestDeletingAnOrgAnswersItAsJSONAndStopsItsKeys: DELETE of an org (staff)
// answers 200 with the org; the org leaves the list, its key no longer
// authenticates, and a second DELETE, like one of an unknown id, is a JSON
// 404.
func TestDeletingAnOrgAnswersItAsJSONAndStopsItsKeys(t *testing.T) {
	e := newEnv(t)
	acme, beta := e.newTenant("acme"), e.newTenant("beta")
	path := "/api/v1/orgs/" + acme.org.ID
	wantError(t, e.do("DELETE", path, acme.org.APIKey, nil), http.StatusForbidden, intake.EFORBIDDEN, "staff")
	gone := must[api.Org](e, 200, "DELETE", path, staffToken, nil)
	if gone.ID != acme.org.ID || gone.Name != "acme" {
		t.Fatalf("DELETE answered %+v", gone)
	}
	wantError(t, e.do("GET", "/api/v1/endpoints", acme.org.APIKey, nil), http.StatusUnauthorized, intake.EUNAUTHORIZED, "")
	wantError(t, e.do("GET", "/api/v1/endpoints/"+acme.ep.ID, staffToken, nil), http.StatusNotFound, intake.ENOTFOUND, "")
	wantError(t, e.do("DELETE", path, staffToken, nil), http.StatusNotFound, intake.ENOTFOUND, "not found")
	wantError(t, e.do("DELETE", "/api/v1/orgs/"+intake.NewID(), staffToken, nil), http.StatusNotFound, intake.ENOTFOUND, "not found")
	wantError(t, e.do("GET", path, staffToken, nil), http.StatusNotFound, intake.ENOTFOUND, "")
	list := must[api.List[api.Org]](e, 200, "GET", "/api/v1/orgs", staffToken, nil)
	if len(list.Items) != 1 || list.Items[0].ID != beta.org.ID {
		t.Fatalf("orgs after the delete: %+v, want beta alone", list.Items)
	}
	if rec := e.do("GET", "/api/v1/endpoints", beta.org.APIKey, nil); rec.Code != http.StatusOK {
		t.Fatalf("another org's key after the delete: %d", rec.Code)
	}
	must[api.Org](e, 201, "POST", "/api/v1/orgs", staffToken, api.CreateOrgRequest{Name: "acme"})
}

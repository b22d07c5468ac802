package api_test

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestKeysAreListedByPrefixAndARevokedKeyStopsAtOnce(t *testing.T) {
	e := newEnv(t)
	acme, globex := e.newTenant("acme"), e.newTenant("globex")
	second := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{})
	if !strings.HasPrefix(second.Key, second.Prefix) || len(second.Prefix) != 9 || second.OrgID != acme.org.ID {
		t.Fatalf("new key %+v", second)
	}
	list := must[api.List[api.APIKey]](e, 200, "GET", "/api/v1/keys", second.Key, nil)
	if len(list.Items) != 2 || !strings.HasPrefix(acme.org.APIKey, list.Items[0].Prefix) {
		t.Fatalf("keys %+v", list.Items)
	}
	raw := e.do("GET", "/api/v1/keys", staffToken, nil).Body.String()
	if strings.Contains(raw, second.Key) || strings.Contains(raw, acme.org.APIKey) {
		t.Fatal("a key listing shows a whole key")
	}
	wantError(t, e.do("DELETE", "/api/v1/keys/"+second.ID, globex.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	if rec := e.do("DELETE", "/api/v1/keys/"+second.ID, acme.org.APIKey, nil); rec.Code != 204 {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	wantError(t, e.do("GET", "/api/v1/connections", second.Key, nil), 401, intake.EUNAUTHORIZED, "invalid token")
	if rec := e.do("GET", "/api/v1/connections", acme.org.APIKey, nil); rec.Code != 200 {
		t.Fatalf("the other key stopped too: %d", rec.Code)
	}
	list = must[api.List[api.APIKey]](e, 200, "GET", "/api/v1/keys", acme.org.APIKey, nil)
	if list.Items[1].RevokedAt == nil || list.Items[0].RevokedAt != nil {
		t.Fatalf("after revoking: %+v", list.Items)
	}
}

// A key's name is given at creation and shown in lists; one over 100 bytes
// is refused and no key is made.
func TestAKeyIsNamedAtCreationAndListedByName(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	k := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Name: "deploy bot", Role: "operator"})
	if k.Name != "deploy bot" {
		t.Fatalf("created %+v", k)
	}
	wantError(t, e.do("POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Name: strings.Repeat("n", 101)}), 400, intake.EINVALID,
		"name must be at most 100 bytes")
	must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Name: strings.Repeat("n", 100)})
	list := must[api.List[api.APIKey]](e, 200, "GET", "/api/v1/keys", acme.org.APIKey, nil)
	names := map[string]string{}
	for _, it := range list.Items {
		names[it.ID] = it.Name
	}
	if len(list.Items) != 3 || names[k.ID] != "deploy bot" {
		t.Fatalf("listed %+v", list.Items)
	}
}

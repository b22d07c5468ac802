package api_test

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestOperatorActionsAreAuditedWithActorAndNoSecrets(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme") // org, connection and endpoint, created by staff and the org key
	must[api.Endpoint](e, 200, "PATCH", "/api/v1/endpoints/"+acme.ep.ID, acme.org.APIKey, map[string]any{"enabled": false})
	must[api.Connection](e, 200, "PUT", "/api/v1/connections/"+acme.conn.ID+"/secrets", acme.org.APIKey,
		api.SecretsRequest{Secrets: []string{"whsec_rotated-secret"}})
	cons := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, api.CreateConsumerRequest{
		Name: "billing", App: "billing", URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"*"}})

	page := must[api.List[api.AuditEntry]](e, 200, "GET", "/api/v1/audit", acme.org.APIKey, nil)
	var actions []string
	for _, a := range page.Items {
		actions = append(actions, a.Action)
		if a.OrgID != acme.org.ID || a.At.IsZero() {
			t.Errorf("entry %+v", a)
		}
	}
	want := []string{"consumer.create", "connection.secrets.replace", "endpoint.update", "endpoint.create", "connection.create", "org.create"}
	if strings.Join(actions, ",") != strings.Join(want, ",") {
		t.Fatalf("actions %v, want %v (newest first)", actions, want)
	}
	if page.Items[5].Actor != "staff" || !strings.HasPrefix(page.Items[0].Actor, "key:ik_") || page.Items[0].TargetID != cons.ID {
		t.Fatalf("actors %q / %q, target %q", page.Items[5].Actor, page.Items[0].Actor, page.Items[0].TargetID)
	}
	if strings.Contains(page.Items[0].Actor, acme.org.APIKey) {
		t.Fatal("the audit log holds a whole API key")
	}
	raw := e.do("GET", "/api/v1/audit", staffToken, nil).Body.String()
	for _, secret := range []string{"whsec_rotated-secret", "whsec_acme", acme.org.APIKey, acme.ep.Token, cons.SigningSecret} {
		if strings.Contains(raw, secret) {
			t.Fatalf("the audit log shows a secret: %q", secret)
		}
	}
}

func TestAnOrgSetsItsOwnRetentionWithinBounds(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/orgs/" + acme.org.ID
	o := must[api.Org](e, 200, "PATCH", path, acme.org.APIKey, map[string]any{"body_retention": "24h", "retention": "240h"})
	if o.BodyRetention != "24h0m0s" || o.Retention != "240h0m0s" {
		t.Fatalf("org %+v", o)
	}
	wantError(t, e.do("PATCH", path, acme.org.APIKey, map[string]any{"retention": "10m"}), 400, intake.EINVALID, "between 1h")
	wantError(t, e.do("PATCH", path, acme.org.APIKey, map[string]any{"retention": "forever"}), 400, intake.EINVALID, "a duration")
	o = must[api.Org](e, 200, "PATCH", path, acme.org.APIKey, map[string]any{"body_retention": ""})
	if o.BodyRetention != "" || o.Retention != "240h0m0s" {
		t.Fatalf("after clearing one: %+v", o)
	}
}

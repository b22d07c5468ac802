package api_test

import (
	"strings"
	"testing"

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

package api_test

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func TestApplyThroughTheAPIShowsMintedSecretsOnceAndThenAllUnchanged(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	doc := `{"orgs":[{"name":"acme","connections":[{"name":"acme account","provider":"apitest","secrets":["whsec_acme"],
		"endpoints":[{"name":"main","rate_per_sec":5,"burst":10}]}],
		"consumers":[{"name":"billing","app":"billing","url":"http://127.0.0.1:9/hooks","event_types":["*"],"filter":"true"}]}]}`

	dry := must[control.Plan](e, 200, "POST", "/api/v1/apply?dry_run=true", acme.org.APIKey, doc)
	if !dry.DryRun || len(dry.Changes) != 4 {
		t.Fatalf("dry run: %+v", dry)
	}
	if got := must[control.Document](e, 200, "GET", "/api/v1/export", acme.org.APIKey, nil); len(got.Orgs[0].Consumers) != 0 {
		t.Fatal("the dry run created the consumer")
	}

	plan := must[control.Plan](e, 200, "POST", "/api/v1/apply", acme.org.APIKey, doc)
	byKind := map[string]control.Change{}
	for _, c := range plan.Changes {
		byKind[c.Kind] = c
	}
	if byKind["org"].Action != "unchanged" || byKind["connection"].Action != "unchanged" ||
		byKind["endpoint"].Action != "create" || byKind["consumer"].Action != "create" {
		t.Fatalf("plan: %+v", plan.Changes)
	}
	if ep := byKind["endpoint"]; ep.Token == "" || ep.URL != publicURL+"/webhooks/"+ep.Token {
		t.Fatalf("created endpoint: %+v", ep)
	}
	if !strings.HasPrefix(byKind["consumer"].SigningSecret, "whsec_") {
		t.Fatalf("created consumer: %+v", byKind["consumer"])
	}

	again := must[control.Plan](e, 200, "POST", "/api/v1/apply?dry_run=false&prune=true", acme.org.APIKey, doc)
	if !again.Unchanged {
		t.Fatalf("second apply: %+v", again.Changes)
	}
	// The endpoint made before, unnamed, is not apply's: prune left it.
	exported := must[control.Document](e, 200, "GET", "/api/v1/export", acme.org.APIKey, nil)
	if eps := exported.Orgs[0].Connections[0].Endpoints; len(eps) != 1 || eps[0].Name != "main" {
		t.Fatalf("exported endpoints: %+v", eps)
	}
	if _, err := e.store.Endpoint(t.Context(), intake.Scope{}, acme.ep.ID); err != nil {
		t.Fatalf("prune deleted the unnamed endpoint: %v", err)
	}
}

func TestApplyRefusesBadQueriesAndDocumentsWithTheirReason(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	wantError(t, e.do("POST", "/api/v1/apply?dry_run=maybe", acme.org.APIKey, `{"orgs":[{"name":"acme"}]}`), 400, intake.EINVALID, "dry_run")
	wantError(t, e.do("POST", "/api/v1/apply", acme.org.APIKey, `{"orgs":[{"name":"acme","colour":"red"}]}`), 400, intake.EINVALID, "colour")
	wantError(t, e.do("POST", "/api/v1/apply", acme.org.APIKey, `{"orgs":[{"name":"acme","connections":[{"name":"x","provider":"nope"}]}]}`),
		400, intake.EINVALID, "unknown provider")
	wantError(t, e.do("POST", "/api/v1/apply", acme.org.APIKey, `{"orgs":[{"name":"other"}]}`), 403, intake.EFORBIDDEN, "own org")
	wantError(t, e.do("GET", "/api/v1/export?org_id=nope", staffToken, nil), 400, intake.EINVALID, "org_id")
}

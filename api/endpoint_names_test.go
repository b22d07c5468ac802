package api_test

import (
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestEndpointNameIsSetOnCreateChangedByPatchAndUniquePerConnection(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	primary := "primary"
	ep := must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", acme.org.APIKey,
		api.CreateEndpointRequest{ConnectionID: acme.conn.ID, Name: &primary})
	if ep.Name != "primary" {
		t.Fatalf("created: %+v", ep)
	}
	if got := must[api.Endpoint](e, 200, "GET", "/api/v1/endpoints/"+ep.ID, acme.org.APIKey, nil); got.Name != "primary" {
		t.Fatalf("shown: %+v", got)
	}
	// A second endpoint of the connection may not take the name; unnamed ones may be many.
	wantError(t, e.do("POST", "/api/v1/endpoints", acme.org.APIKey, api.CreateEndpointRequest{ConnectionID: acme.conn.ID, Name: &primary}),
		409, intake.ECONFLICT, "primary")
	wantError(t, e.do("PATCH", "/api/v1/endpoints/"+acme.ep.ID, acme.org.APIKey, `{"name":"primary"}`), 409, intake.ECONFLICT, "primary")
	if got := must[api.Endpoint](e, 200, "PATCH", "/api/v1/endpoints/"+ep.ID, acme.org.APIKey, `{"name":"main"}`); got.Name != "main" || !got.Enabled {
		t.Fatalf("renamed: %+v", got)
	}
	if got := must[api.Endpoint](e, 200, "PATCH", "/api/v1/endpoints/"+acme.ep.ID, acme.org.APIKey, `{"name":"primary"}`); got.Name != "primary" {
		t.Fatalf("name freed by the rename: %+v", got)
	}
}

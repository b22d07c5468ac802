package api_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/internal/token"
)

func TestEndpointTokenIsShownOnceAndOnlyItsHashStored(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ep := acme.ep
	raw, err := base64.RawURLEncoding.DecodeString(ep.Token)
	if err != nil || len(raw) < 16 {
		t.Fatalf("token %q: want at least 128 random bits, URL-safe", ep.Token)
	}
	if ep.URL != publicURL+"/webhooks/"+ep.Token {
		t.Fatalf("url = %q", ep.URL)
	}
	stored, err := e.store.EndpointByTokenHash(context.Background(), token.Hash(ep.Token))
	if err != nil || stored.ID != ep.ID || stored.Provider != testProvider || stored.OrgID != acme.org.ID {
		t.Fatalf("endpoint by token hash: %+v, %v", stored, err)
	}
	for _, path := range []string{"/api/v1/endpoints", "/api/v1/endpoints/" + ep.ID} {
		if body := e.do("GET", path, acme.org.APIKey, nil).Body.String(); strings.Contains(body, ep.Token) || strings.Contains(body, `"url"`) {
			t.Fatalf("%s shows the token: %s", path, body)
		}
	}
	if strings.Contains(string(e.dbBytes()), ep.Token) {
		t.Fatal("the endpoint token is stored in plaintext")
	}
}

func TestEndpointLimitsDefaultWhenAbsentAndZeroRateMeansNoLimit(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	if ep := acme.ep; !ep.Enabled || ep.MaxBodyBytes != intake.DefaultMaxBodyBytes || ep.RatePerSec != intake.DefaultRatePerSec || ep.Burst != intake.DefaultBurst {
		t.Fatalf("defaults: %+v", ep)
	}
	zero := 0.0
	unlimited := must[api.Endpoint](e, 201, "POST", "/api/v1/endpoints", acme.org.APIKey,
		api.CreateEndpointRequest{ConnectionID: acme.conn.ID, RatePerSec: &zero})
	if unlimited.RatePerSec != 0 || unlimited.Burst != intake.DefaultBurst {
		t.Fatalf("rate_per_sec 0: %+v", unlimited)
	}
	got := must[api.Endpoint](e, 200, "GET", "/api/v1/endpoints/"+unlimited.ID, acme.org.APIKey, nil)
	if got.RatePerSec != 0 {
		t.Fatalf("stored rate %v, want 0 (no limit)", got.RatePerSec)
	}
}

func TestPatchingAnEndpointChangesOnlyTheFieldsGiven(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/endpoints/" + acme.ep.ID
	got := must[api.Endpoint](e, 200, "PATCH", path, acme.org.APIKey, `{"enabled":false}`)
	if got.Enabled || got.MaxBodyBytes != intake.DefaultMaxBodyBytes || got.RatePerSec != intake.DefaultRatePerSec || got.Token != "" {
		t.Fatalf("after disabling: %+v", got)
	}
	got = must[api.Endpoint](e, 200, "PATCH", path, acme.org.APIKey, `{"max_body_bytes":2048,"rate_per_sec":2.5,"burst":5}`)
	if got.Enabled || got.MaxBodyBytes != 2048 || got.RatePerSec != 2.5 || got.Burst != 5 {
		t.Fatalf("after limits: %+v", got)
	}
	stored, err := e.store.Endpoint(context.Background(), intake.Scope{}, acme.ep.ID)
	if err != nil || stored.Enabled || stored.MaxBodyBytes != 2048 || stored.RatePerSec != 2.5 || stored.Burst != 5 {
		t.Fatalf("stored: %+v, %v", stored, err)
	}
	// An invalid change leaves the endpoint as it was.
	wantError(t, e.do("PATCH", path, acme.org.APIKey, `{"enabled":true,"max_body_bytes":-1}`), 400, intake.EINVALID, "max_body_bytes")
	if got := must[api.Endpoint](e, 200, "GET", path, acme.org.APIKey, nil); got.Enabled || got.MaxBodyBytes != 2048 {
		t.Fatalf("a refused change was applied: %+v", got)
	}
}

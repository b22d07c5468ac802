package api_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

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

// A rotation answers the new token and URL once; the replaced token keeps
// addressing the endpoint for the overlap, and a second rotation within it
// ends the oldest at once: at most two tokens live.
func TestRotatingAnEndpointTwiceWithinTheOverlapEndsTheOldestTokenAtOnce(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	ctx := context.Background()
	path := "/api/v1/endpoints/" + acme.ep.ID + "/rotate"
	addressed := func(tok string) bool {
		t.Helper()
		ep, err := e.store.EndpointByTokenHash(ctx, token.Hash(tok))
		if intake.ErrorCode(err) == intake.ENOTFOUND {
			return false
		}
		if err != nil || ep.ID != acme.ep.ID {
			t.Fatalf("by token: %+v %v", ep, err)
		}
		return ep.AddressedBy(token.Hash(tok), e.clock.Now())
	}

	first := acme.ep.Token
	r1 := must[api.RotatedEndpoint](e, 201, "POST", path, acme.org.APIKey, api.RotateEndpointRequest{Overlap: "1h"})
	if r1.ID != acme.ep.ID || r1.Token == "" || r1.Token == first || r1.URL != publicURL+"/webhooks/"+r1.Token ||
		!r1.PreviousExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("rotated: %+v", r1)
	}
	if !addressed(first) || !addressed(r1.Token) {
		t.Fatal("within the overlap, the old token and the new one should both work")
	}
	e.clock.Advance(time.Minute)
	r2 := must[api.RotatedEndpoint](e, 201, "POST", path, acme.org.APIKey, api.RotateEndpointRequest{})
	if !r2.PreviousExpiresAt.Equal(e.clock.Now().Add(intake.DefaultTokenOverlap)) {
		t.Fatalf("no overlap given: the replaced token works until %v, want 24h from now", r2.PreviousExpiresAt)
	}
	if addressed(first) {
		t.Fatal("a second rotation within the overlap left the oldest token working: three tokens live")
	}
	if !addressed(r1.Token) || !addressed(r2.Token) {
		t.Fatal("the token just replaced lost its overlap, or the new one does not work")
	}
	r3 := must[api.RotatedEndpoint](e, 201, "POST", path, acme.org.APIKey, api.RotateEndpointRequest{Overlap: "0s"})
	if addressed(r2.Token) || addressed(r1.Token) || !addressed(r3.Token) {
		t.Fatal("overlap 0s: only the new token should work")
	}
	if body := e.do("GET", "/api/v1/audit", acme.org.APIKey, nil).Body.String(); !strings.Contains(body, `"endpoint.rotate"`) || strings.Contains(body, r3.Token) {
		t.Fatalf("the rotation is not audited, or its token is: %s", body)
	}
}

func TestRotatingAnEndpointRefusesAnOverlapOutOfBoundsANonAdminAndAnotherOrg(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	other := e.newTenant("other")
	path := "/api/v1/endpoints/" + acme.ep.ID + "/rotate"
	for _, overlap := range []string{"169h", "-1s", "soon"} {
		wantError(t, e.do("POST", path, acme.org.APIKey, api.RotateEndpointRequest{Overlap: overlap}), 400, intake.EINVALID, "overlap must be a duration")
	}
	must[api.RotatedEndpoint](e, 201, "POST", path, acme.org.APIKey, api.RotateEndpointRequest{Overlap: "168h"})
	operator := must[api.APIKey](e, 201, "POST", "/api/v1/keys", acme.org.APIKey, api.CreateKeyRequest{Role: "operator"})
	wantError(t, e.do("POST", path, operator.Key, nil), 403, intake.EFORBIDDEN, "needs the admin role")
	wantError(t, e.do("POST", path, other.org.APIKey, nil), 404, intake.ENOTFOUND, "not found")
	stored, err := e.store.Endpoint(context.Background(), intake.Scope{}, acme.ep.ID)
	if err != nil || stored.Version != 2 {
		t.Fatalf("after one rotation and the refusals: version %d %v, want 2", stored.Version, err)
	}
}

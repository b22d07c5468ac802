package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/internal/token"
)

// Rotate on the endpoints page shows the new URL once and says until when
// the old one works; an operator's rotation and an overlap past 168h are
// refused and change nothing.
func TestRotatingAnEndpointShowsTheNewURLOnceAndSaysWhenTheOldStops(t *testing.T) {
	e := newEnv(t)
	acme := e.tenant("acme")
	ctx := context.Background()
	b := e.browser()
	b.signIn(acme.org.APIKey)
	path := "/console/endpoints/" + acme.ep.ID + "/rotate"

	p := b.post(path, url.Values{"csrf": {b.csrf()}, "overlap": {"1h"}})
	wantStatus(t, p, http.StatusOK)
	u := regexp.MustCompile(`id="endpoint-url">([^<]+)<`).FindStringSubmatch(p.body)
	if u == nil || !strings.HasPrefix(u[1], e.url+"/webhooks/") || !strings.Contains(p.body, "Endpoint rotated") || !strings.Contains(p.body, "keeps working until") {
		t.Fatalf("no new URL, or no word of the old one, on the page:\n%.2000s", p.body)
	}
	tok := strings.TrimPrefix(u[1], e.url+"/webhooks/")
	if strings.Contains(b.get("/console/endpoints").body, tok) {
		t.Fatal("the new URL is shown again")
	}
	ep, err := e.store.EndpointByTokenHash(ctx, token.Hash(tok))
	if err != nil || ep.ID != acme.ep.ID {
		t.Fatalf("the new token finds %+v %v", ep, err)
	}

	operator := e.browser()
	operator.signIn(apiCall[api.APIKey](e, acme.org.APIKey, "POST", "/api/v1/keys", api.CreateKeyRequest{Role: "operator"}).Key)
	wantStatus(t, operator.post(path, url.Values{"csrf": {operator.csrf()}}), http.StatusForbidden)
	if p := b.post(path, url.Values{"csrf": {b.csrf()}, "overlap": {"200h"}}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "overlap must be") {
		t.Fatalf("an overlap of 200h: %d %.600s", p.status, p.body)
	}
	if now, _ := e.store.Endpoint(ctx, intake.Scope{}, acme.ep.ID); now.Version != ep.Version {
		t.Fatalf("a refused rotation changed the endpoint: version %d, was %d", now.Version, ep.Version)
	}
}

package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake/api"
)

func TestARevokedKeysConsoleSessionIsRefusedOnTheNextPage(t *testing.T) {
	e := newEnv(t)
	tn := e.tenant("acme")
	key := apiCall[api.APIKey](e, staffToken, "POST", "/api/v1/keys", api.CreateKeyRequest{OrgID: tn.org.ID})
	b := e.browser()
	b.signIn(key.Key)
	wantStatus(t, b.get("/console/messages"), http.StatusOK)
	apiCall[struct{}](e, staffToken, "DELETE", "/api/v1/keys/"+key.ID, nil)
	p := b.get("/console/messages")
	wantStatus(t, p, http.StatusSeeOther)
	if loc := p.header.Get("Location"); !strings.HasPrefix(loc, "/console/login") {
		t.Fatalf("the revoked key's session was sent to %q, want the sign-in page", loc)
	}
}

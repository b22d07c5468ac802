package provider

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Azure Event Grid may authenticate its deliveries with Microsoft Entra ID
// (https://learn.microsoft.com/azure/event-grid/secure-webhook-delivery):
// Authorization carries "Bearer <access token>", an RS256 JWT the tenant's
// Entra ID issues to Event Grid's own application for the receiving
// application. With config entra_tenant (the directory id), a delivery must
// carry such a token besides the connection's secret in the URL's query:
// iss the tenant's (v1 https://sts.windows.net/<tenant>/ or v2
// https://login.microsoftonline.com/<tenant>/v2.0), aud config
// entra_audience (the application ID URI or client id the subscription
// names), appid (v1) or azp (v2) Event Grid's application, exp (and nbf,
// less go-oidc's five minutes) judged at receipt. The keys come only from the tenant's key set on
// login.microsoftonline.com, fetched when a key id is new and cached, at
// most once a minute for each tenant; or the operator pins them (config
// public_keys), and then nothing is fetched.

// eventGridAppID is the application id of Event Grid's service principal,
// the one Entra ID issues delivery tokens to.
const eventGridAppID = "4962773b-9cdb-44cf-a8bf-237846a00ab7"

// entraTenantID is a directory (tenant) id: a GUID, which is all the key
// URL built from it may hold.
var entraTenantID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// entraKeysURL is where Entra ID publishes a tenant's signing keys.
func entraKeysURL(tenant string) string {
	return "https://login.microsoftonline.com/" + tenant + "/discovery/v2.0/keys"
}

// entraKeySet is the key set tests serve from loopback (nil: the tenant's
// at Entra ID). Nothing outside this package's tests sets it.
var entraKeySet oidc.KeySet

// entraTenants keeps the fetched key sets of the 64 tenants used last.
var entraTenants = sync.OnceValue(func() *lru.Cache[string, oidc.KeySet] {
	c, err := lru.New[string, oidc.KeySet](64)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
})

// entraKeys is tenant's key set, fetched from Entra ID.
func entraKeys(tenant string) oidc.KeySet {
	ks := newPubSubKeySet(entraKeysURL(tenant), http.DefaultTransport)
	if prev, ok, _ := entraTenants().PeekOrAdd(tenant, ks); ok {
		return prev
	}
	return ks
}

// entraPinned keeps connections' pinned Entra ID keys parsed.
var entraPinned = newPEMCache[[]crypto.PublicKey](pinnedEntries)

// entraConfig is a connection's Entra ID settings; tenant "" when the
// connection does not use Entra ID.
type entraConfig struct {
	tenant, audience string
	pinned           []crypto.PublicKey
}

func readEntraConfig(cfg Config) (entraConfig, error) {
	var c entraConfig
	var err error
	if c.tenant, err = stringSetting(cfg, "entra_tenant"); err != nil {
		return c, err
	}
	if c.audience, err = stringSetting(cfg, "entra_audience"); err != nil {
		return c, err
	}
	keys, err := stringSetting(cfg, "public_keys")
	if err != nil {
		return c, err
	}
	if c.tenant == "" {
		if c.audience != "" || keys != "" {
			return c, errors.New("config entra_audience and public_keys need entra_tenant")
		}
		return c, nil
	}
	c.tenant = strings.ToLower(c.tenant)
	if !entraTenantID.MatchString(c.tenant) {
		return c, errors.New("config entra_tenant: the directory (tenant) id, a GUID")
	}
	if c.audience == "" {
		return c, errors.New("config entra_audience: the application ID URI or client id Event Grid asks its token for is required")
	}
	if keys != "" {
		if c.pinned, err = entraPinned.get(keys, parsePublicKeys); err != nil {
			return c, err
		}
	}
	return c, nil
}

// verifyEntra verifies r's Entra ID token under c.
func verifyEntra(r *Request, c entraConfig) error {
	token, ok := strings.CutPrefix(strings.TrimSpace(headerValue(r.Header, "Authorization")), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return sigError("azure_eventgrid: Authorization carries no Microsoft Entra ID token")
	}
	keys := entraKeySet
	switch {
	case len(c.pinned) > 0:
		keys = &oidc.StaticKeySet{PublicKeys: c.pinned}
	case keys == nil:
		keys = entraKeys(c.tenant)
	}
	at := r.ReceivedAt
	if at.IsZero() {
		at = keyClock.Now()
	}
	call := &keyCall{KeySet: keys}
	v := oidc.NewVerifier("", call, &oidc.Config{
		ClientID: c.audience, SkipIssuerCheck: true, SupportedSigningAlgs: []string{oidc.RS256},
		Now: func() time.Time { return at },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tok, err := v.Verify(ctx, strings.TrimSpace(token))
	if err != nil {
		return call.unverified("azure_eventgrid", "Entra ID's", err)
	}
	if tok.Issuer != "https://sts.windows.net/"+c.tenant+"/" && tok.Issuer != "https://login.microsoftonline.com/"+c.tenant+"/v2.0" {
		return sigError("azure_eventgrid: the token was not issued by the tenant's Entra ID")
	}
	var claims struct {
		AppID string `json:"appid"`
		AZP   string `json:"azp"`
	}
	if err := tok.Claims(&claims); err != nil || (claims.AppID != eventGridAppID && claims.AZP != eventGridAppID) {
		return sigError("azure_eventgrid: the token was not issued to Event Grid")
	}
	return nil
}

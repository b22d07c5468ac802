package provider

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Entra ID publishes no token with its keys, so the tokens are signed here
// with a test key, with the claims Microsoft documents for v1 and v2 access
// tokens (https://learn.microsoft.com/entra/identity-platform/access-token-claims-reference).
const (
	entraTenant   = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	entraAudience = "api://intake-eventgrid-receiver"
)

var entraCfg = Config{"entra_tenant": entraTenant, "entra_audience": entraAudience}

// entraClaims are a v1 delivery token's claims, issued at at.
func entraClaims(at time.Time) map[string]any {
	return map[string]any{
		"iss": "https://sts.windows.net/" + entraTenant + "/", "aud": entraAudience, "appid": eventGridAppID,
		"tid": entraTenant, "sub": "0b1c4b5e-7a29-4ad9-9c4a-4d0a5d4c9f21", "ver": "1.0",
		"iat": at.Unix(), "nbf": at.Unix(), "exp": at.Add(time.Hour).Unix(),
	}
}

// serveEntraKeys serves the test key's JWKS from loopback as the tenant's,
// counting the fetches.
func serveEntraKeys(t *testing.T) *atomic.Int32 {
	t.Helper()
	key := &pki(t).key.PublicKey
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "kid": "entra-1", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	}))
	entraKeySet = newPubSubKeySet(srv.URL, srv.Client().Transport)
	t.Cleanup(func() { srv.Close(); entraKeySet = nil })
	return &n
}

// entraDelivery is a delivery of body with the secret in the URL's query
// and token as its bearer.
func entraDelivery(body, token string) *Request {
	return egRequest("POST", "code="+egSecret, body, "Authorization", "Bearer "+token, "aeg-event-type", "Notification")
}

func TestAzureEventGridVerifiesAnEntraIDTokenWithTheTenantsKeys(t *testing.T) {
	p := pki(t)
	fetches := serveEntraKeys(t)
	a := adapter(t, "azure_eventgrid")
	v1 := pubsubJWT(t, p.key, "entra-1", "RS256", entraClaims(received.Add(-time.Minute)))
	wantVerified(t, a.Verify(entraDelivery(egBlobBody, v1), secrets(egSecret), entraCfg))
	v2claims := entraClaims(received)
	delete(v2claims, "appid")
	v2claims["iss"], v2claims["azp"], v2claims["ver"] = "https://login.microsoftonline.com/"+entraTenant+"/v2.0", eventGridAppID, "2.0"
	v2claims["aud"] = "5f9a3c1e-2b7d-4e8a-9c6f-1a2b3c4d5e6f"
	wantVerified(t, a.Verify(entraDelivery(egBlobBody, pubsubJWT(t, p.key, "entra-1", "RS256", v2claims)), secrets(egSecret),
		Config{"entra_tenant": strings.ToUpper(entraTenant), "entra_audience": "5f9a3c1e-2b7d-4e8a-9c6f-1a2b3c4d5e6f"}))
	if n := fetches.Load(); n != 1 {
		t.Fatalf("the keys were fetched %d times, want once", n)
	}

	// The validation handshake is answered only with the token too.
	ch, ok := a.(Challenger).Challenge(entraDelivery(egValidationBody, v1), secrets(egSecret), entraCfg)
	if !ok || ch.Status != http.StatusOK || !strings.Contains(string(ch.Body), "512d38b6-c7b8-40c8-89fe-f46f9e9622b6") {
		t.Fatalf("validation with the token: %v %d %s", ok, ch.Status, ch.Body)
	}
	noToken := egRequest("POST", "code="+egSecret, egValidationBody)
	if ch, ok := a.(Challenger).Challenge(noToken, secrets(egSecret), entraCfg); !ok || ch.Status != http.StatusUnauthorized {
		t.Fatalf("validation without the token: %v %d, want 401", ok, ch.Status)
	}
}

func TestAzureEventGridRefusesEntraIDTokensNotForItsDeliveries(t *testing.T) {
	p := pki(t)
	serveEntraKeys(t)
	token := func(change func(c map[string]any)) string {
		c := entraClaims(received.Add(-time.Minute))
		if change != nil {
			change(c)
		}
		return pubsubJWT(t, p.key, "entra-1", "RS256", c)
	}
	good := token(nil)
	i := strings.LastIndex(good, ".") + 10
	flipped := good[:i] + map[bool]string{true: "B", false: "A"}[good[i] == 'A'] + good[i+1:]
	wantAllRejected(t, "azure_eventgrid", entraCfg, []rejectCase{
		{"no token", egRequest("POST", "code="+egSecret, egBlobBody), secrets(egSecret)},
		{"the secret as the bearer", egRequest("POST", "", egBlobBody, "Authorization", "Bearer "+egSecret), secrets(egSecret)},
		{"a token without the secret", egRequest("POST", "", egBlobBody, "Authorization", "Bearer "+good), secrets(egSecret)},
		{"signature changed by one character", entraDelivery(egBlobBody, flipped), secrets(egSecret)},
		{"signed with another key", entraDelivery(egBlobBody, pubsubJWT(t, p.otherKey, "entra-1", "RS256", entraClaims(received))), secrets(egSecret)},
		{"expired before receipt", entraDelivery(egBlobBody, token(func(c map[string]any) { c["exp"] = received.Add(-time.Minute).Unix() })), secrets(egSecret)},
		{"for another audience", entraDelivery(egBlobBody, token(func(c map[string]any) { c["aud"] = "api://another-app" })), secrets(egSecret)},
		{"issued by another tenant", entraDelivery(egBlobBody, token(func(c map[string]any) {
			c["iss"] = "https://sts.windows.net/00000000-1111-2222-3333-444444444444/"
		})), secrets(egSecret)},
		{"issued by someone else", entraDelivery(egBlobBody, token(func(c map[string]any) { c["iss"] = "https://issuer.example.com/" })), secrets(egSecret)},
		{"issued to another application", entraDelivery(egBlobBody, token(func(c map[string]any) { c["appid"] = "11111111-2222-3333-4444-555555555555" })), secrets(egSecret)},
		{"an HS256 token", entraDelivery(egBlobBody, strings.Replace(good, good[:strings.Index(good, ".")],
			base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"entra-1","typ":"JWT"}`)), 1)), secrets(egSecret)},
	})
}

func TestAzureEventGridFetchesNoEntraIDKeysWhenPinnedOrWithoutTheSecret(t *testing.T) {
	p := pki(t)
	fetches := serveEntraKeys(t)
	a := adapter(t, "azure_eventgrid")
	der, err := x509.MarshalPKIXPublicKey(&p.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pinned := Config{"entra_tenant": entraTenant, "entra_audience": entraAudience,
		"public_keys": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
	tok := pubsubJWT(t, p.key, "entra-1", "RS256", entraClaims(received))
	wantVerified(t, a.Verify(entraDelivery(egBlobBody, tok), secrets(egSecret), pinned))
	wantRejected(t, a.Verify(entraDelivery(egBlobBody, pubsubJWT(t, p.otherKey, "entra-1", "RS256", entraClaims(received))), secrets(egSecret), pinned))
	wantRejected(t, a.Verify(entraDelivery(egBlobBody, tok), secrets("another-secret"), entraCfg))
	if n := fetches.Load(); n != 0 {
		t.Fatalf("the keys were fetched %d times, want never", n)
	}
}

func TestAzureEventGridEntraIDKeysComeOnlyFromTheTenantsKeySet(t *testing.T) {
	if got, want := entraKeysURL(entraTenant), "https://login.microsoftonline.com/"+entraTenant+"/discovery/v2.0/keys"; got != want {
		t.Fatalf("keys URL %s, want %s", got, want)
	}
	a := adapter(t, "azure_eventgrid")
	for _, cfg := range []Config{
		{"entra_tenant": "evil.example.com/x", "entra_audience": entraAudience},
		{"entra_tenant": "../" + entraTenant, "entra_audience": entraAudience},
		{"entra_tenant": entraTenant},
		{"entra_audience": entraAudience},
		{"public_keys": "-----BEGIN PUBLIC KEY-----"},
		{"entra_tenant": entraTenant, "entra_audience": entraAudience, "public_keys": "not PEM"},
	} {
		if a.ValidateConfig(cfg) == nil {
			t.Errorf("config %v accepted", cfg)
		}
		err := a.Verify(entraDelivery(egBlobBody, "x.y.z"), secrets(egSecret), cfg)
		if err == nil || errors.Is(err, ErrSignature) {
			t.Errorf("config %v: Verify %v, want a config error", cfg, err)
		}
	}
	if err := a.ValidateConfig(entraCfg); err != nil {
		t.Fatalf("config %v: %v", entraCfg, err)
	}
}

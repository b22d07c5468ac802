package sdkcheck

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/intakehq/intake/provider"
)

// googleCertsURL is where Google publishes the keys of its OIDC tokens, the
// one URL idtoken reads for RS256 tokens.
const googleCertsURL = "https://www.googleapis.com/oauth2/v3/certs"

// pubsubAccount is the push subscription's service account in intake's
// sample.
const pubsubAccount = "intake-sample@intake-sample.iam.gserviceaccount.com"

// googleKeys answers googleCertsURL with a JWKS of keys (by key id), and
// anything else with 404, recording what was asked: Google as idtoken
// reaches it.
type googleKeys struct {
	keys map[string]*rsa.PublicKey

	mu    sync.Mutex
	asked []string
}

func (g *googleKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	g.asked = append(g.asked, r.URL.String())
	g.mu.Unlock()
	answer := func(status int, body []byte) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	}
	if r.URL.String() != googleCertsURL {
		return answer(http.StatusNotFound, nil)
	}
	type jwk struct {
		Kid string `json:"kid"`
		Kty string `json:"kty"`
		Alg string `json:"alg"`
		Use string `json:"use"`
		N   string `json:"n"`
		E   string `json:"e"`
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for kid, k := range g.keys {
		set.Keys = append(set.Keys, jwk{kid, "RSA", "RS256", "sig", b64(k.N.Bytes()), b64(big.NewInt(int64(k.E)).Bytes())})
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return answer(http.StatusOK, raw)
}

// pubsubToken is an RS256 JWT of claims under kid, signed with key.
func pubsubToken(t testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	signing := enc(map[string]string{"alg": "RS256", "kid": kid, "typ": "JWT"}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// google.golang.org/api/idtoken (Google's Go client) verifies a push's OIDC
// token (Validator.Validate: RS256 under Google's published keys, aud, exp
// on the wall clock, so the tokens are made around now and received now);
// the issuer and service-account checks beside it are those Google's
// Pub/Sub push sample adds. intake holds the same key pinned (config
// public_keys), so it fetches nothing; idtoken fetches only Google's keys.
func TestGooglePubSubAgreesWithIDToken(t *testing.T) {
	now := time.Now()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := provider.Config{"service_account": pubsubAccount, "audience": endpointURL,
		"public_keys": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))}

	keys := &googleKeys{keys: map[string]*rsa.PublicKey{"intake-sample": &key.PublicKey, "sdkcheck-key": &key.PublicKey}}
	validator, err := idtoken.NewValidator(context.Background(), option.WithHTTPClient(&http.Client{Transport: keys}))
	if err != nil {
		t.Fatal(err)
	}

	good := sample(t, "google_pubsub", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), now)
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://accounts.google.com", "aud": endpointURL, "azp": "100000000000000000000",
			"sub": "100000000000000000000", "email": pubsubAccount, "email_verified": true,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	bearer := func(signer *rsa.PrivateKey, c map[string]any) *provider.Request {
		return withHeader(good, "Authorization", "Bearer "+pubsubToken(t, signer, "sdkcheck-key", c))
	}
	token := strings.TrimPrefix(good.Header.Get("Authorization"), "Bearer ")

	agree(t, "google_pubsub", nil, cfg, func(r *provider.Request) bool {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return false
		}
		p, err := validator.Validate(context.Background(), token, endpointURL)
		if err != nil {
			return false
		}
		email, _ := p.Claims["email"].(string)
		verified, _ := p.Claims["email_verified"].(bool)
		return (p.Issuer == "https://accounts.google.com" || p.Issuer == "accounts.google.com") && verified && email == pubsubAccount
	}, []delivery{
		{"intake's sample", good, true},
		{"a token for the subscription", bearer(key, claims(nil)), true},
		{"issued as accounts.google.com", bearer(key, claims(func(c map[string]any) { c["iss"] = "accounts.google.com" })), true},
		{"expired ten minutes before receipt", bearer(key, claims(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Minute).Unix() })), false},
		{"for another audience", bearer(key, claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example.com/push" })), false},
		{"for another service account", bearer(key, claims(func(c map[string]any) { c["email"] = "someone@evil.iam.gserviceaccount.com" })), false},
		{"its email not verified", bearer(key, claims(func(c map[string]any) { c["email_verified"] = false })), false},
		{"issued by someone else", bearer(key, claims(func(c map[string]any) { c["iss"] = "https://issuer.example.com" })), false},
		{"signed with another key", bearer(other, claims(nil)), false},
		{"signature changed by one character", withHeader(good, "Authorization", "Bearer "+flipBase64URLTail(token)), false},
		{"no Authorization", withHeader(good, "Authorization", ""), false},
	})
	for _, u := range keys.asked {
		if u != googleCertsURL {
			t.Errorf("idtoken asked for %s", u)
		}
	}
	if len(keys.asked) == 0 {
		t.Error("idtoken never read Google's keys: the deliveries did not reach the signature check")
	}
}

// flipBase64URLTail changes one character in the signature part of a JWT,
// keeping it base64url of the same length.
func flipBase64URLTail(jwt string) string {
	i := strings.LastIndex(jwt, ".") + 10
	repl := "A"
	if jwt[i] == 'A' {
		repl = "B"
	}
	return jwt[:i] + repl + jwt[i+1:]
}

package provider

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The push body is Google's documented example
// (https://cloud.google.com/pubsub/docs/push#receive_push); Google
// publishes no token with its key, so tokens are signed here with a test
// key, as Google signs them (RS256, its claims).
const (
	pubsubBody = `{
    "message": {
        "attributes": {"key": "value"},
        "data": "SGVsbG8gQ2xvdWQgUHViL1N1YiEgSGVyZSBpcyBteSBtZXNzYWdlIQ==",
        "messageId": "2070443601311540",
        "message_id": "2070443601311540",
        "publishTime": "2021-02-26T19:13:55.749Z",
        "publish_time": "2021-02-26T19:13:55.749Z"
    },
   "subscription": "projects/myproject/subscriptions/mysubscription"
}`
	pubsubAccount = "push-invoker@myproject.iam.gserviceaccount.com"
)

// pubsubJWT signs claims as an RS256 JWT with key id kid.
func pubsubJWT(t testing.TB, key *rsa.PrivateKey, kid, alg string, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"}) + "." + enc(claims)
	d := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, d[:])
	if err != nil && t != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// pubsubClaims are a push token's claims for audience aud, issued at at.
func pubsubClaims(aud string, at time.Time) map[string]any {
	return map[string]any{
		"iss": "https://accounts.google.com", "aud": aud, "azp": "1234567890", "sub": "1234567890",
		"email": pubsubAccount, "email_verified": true, "iat": at.Unix(), "exp": at.Add(time.Hour).Unix(),
	}
}

// servePubSubKeys serves the test key's JWKS from loopback as Google's,
// counting the fetches.
func servePubSubKeys(t *testing.T, key *rsa.PublicKey, kid string) *atomic.Int32 {
	t.Helper()
	return servePubSubKeysPadded(t, key, kid, 0)
}

// servePubSubKeysPadded serves the key set with pad bytes of filler.
func servePubSubKeysPadded(t *testing.T, key *rsa.PublicKey, kid string, pad int) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"filler": strings.Repeat("x", pad), "keys": []any{map[string]string{
			"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	}))
	pubsubKeySet = newPubSubKeySet(srv.URL, srv.Client().Transport)
	t.Cleanup(func() { srv.Close(); pubsubKeySet = nil })
	return &n
}

func pubsubPush(token string) *Request {
	return post(pubsubBody, "Authorization", "Bearer "+token, "Content-Type", "application/json")
}

var pubsubCfg = Config{"service_account": pubsubAccount}

func TestGooglePubSubVerifiesGooglesTokenWithKeysFetchedOnce(t *testing.T) {
	p := pki(t)
	fetches := servePubSubKeys(t, &p.key.PublicKey, "k1")
	tok := pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims(fuzzURL, received.Add(-time.Minute)))
	wantVerified(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, pubsubCfg))
	wantVerified(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, pubsubCfg))
	if n := fetches.Load(); n != 1 {
		t.Fatalf("the keys were fetched %d times, want once", n)
	}
	aud := pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims("https://example.com/push", received))
	wantVerified(t, adapter(t, "google_pubsub").Verify(pubsubPush(aud), nil, Config{"service_account": pubsubAccount, "audience": "https://example.com/push"}))
}

func TestGooglePubSubRejects(t *testing.T) {
	p := pki(t)
	servePubSubKeys(t, &p.key.PublicKey, "k1")
	claims := func(change func(c map[string]any)) string {
		c := pubsubClaims(fuzzURL, received.Add(-time.Minute))
		change(c)
		return pubsubJWT(t, p.key, "k1", "RS256", c)
	}
	good := claims(func(map[string]any) {})
	flipped := []byte(good)
	flipped[len(flipped)-5] ^= 1
	expired := pubsubPush(good)
	expired.ReceivedAt = received.Add(2 * time.Hour)
	wantAllRejected(t, "google_pubsub", pubsubCfg, []rejectCase{
		{"token changed by one byte", pubsubPush(string(flipped)), nil},
		{"signed with another key", pubsubPush(pubsubJWT(t, p.otherKey, "k1", "RS256", pubsubClaims(fuzzURL, received))), nil},
		{"another audience", pubsubPush(claims(func(c map[string]any) { c["aud"] = "https://evil.example.com/" })), nil},
		{"another service account", pubsubPush(claims(func(c map[string]any) { c["email"] = "someone@evil.iam.gserviceaccount.com" })), nil},
		{"email not verified", pubsubPush(claims(func(c map[string]any) { c["email_verified"] = false })), nil},
		{"another issuer", pubsubPush(claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), nil},
		{"expired at receipt", expired, nil},
		{"HS256", pubsubPush(pubsubJWT(t, p.key, "k1", "HS256", pubsubClaims(fuzzURL, received))), nil},
		{"missing Authorization", post(pubsubBody), nil},
		{"not a bearer token", post(pubsubBody, "Authorization", "Basic dXNlcjpwYXNz"), nil},
	})
}

func TestGooglePubSubRefusesAKeySetTooLargeToRead(t *testing.T) {
	p := pki(t)
	servePubSubKeysPadded(t, &p.key.PublicKey, "k1", maxJWKSBytes)
	tok := pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims(fuzzURL, received))
	wantRejected(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, pubsubCfg))
}

func TestGooglePubSubUsesPinnedKeysAndFetchesNothing(t *testing.T) {
	p := pki(t)
	fetches := servePubSubKeys(t, &p.otherKey.PublicKey, "k1")
	tok := pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims(fuzzURL, received))
	cfg := Config{"service_account": pubsubAccount, "public_keys": p.pinnedPEM}
	if err := adapter(t, "google_pubsub").ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	wantVerified(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, cfg))
	wantRejected(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, Config{"service_account": pubsubAccount, "public_keys": p.otherLeafPEM}))
	if n := fetches.Load(); n != 0 {
		t.Fatalf("fetched %d times with pinned keys", n)
	}
}

func TestGooglePubSubNeedsAServiceAccount(t *testing.T) {
	a := adapter(t, "google_pubsub")
	if err := a.ValidateConfig(Config{}); err == nil {
		t.Fatal("a connection without service_account was accepted")
	}
	for _, cfg := range []Config{{"service_account": pubsubAccount, "public_keys": "nothing"}, {"service_account": 1}} {
		if err := a.ValidateConfig(cfg); err == nil {
			t.Errorf("ValidateConfig(%v) accepted", cfg)
		}
	}
	wantPermanent(t, a.Verify(pubsubPush("x.y.z"), nil, Config{}))
	if err := CheckSecrets("google_pubsub", nil); err != nil {
		t.Fatalf("CheckSecrets: %v", err)
	}
}

func TestGooglePubSubInterpretsTheMessageId(t *testing.T) {
	ev := oneEvent(t, adapter(t, "google_pubsub"), post(pubsubBody), nil)
	if ev.ProviderEventID != "2070443601311540" || ev.Type != "google_pubsub.message" || ev.Kind != intake.KindEvent ||
		!ev.OccurredAt.Equal(time.Date(2021, 2, 26, 19, 13, 55, 749e6, time.UTC)) ||
		!equalStrings(ev.ObjectIDs, []string{"projects/myproject/subscriptions/mysubscription"}) {
		t.Fatalf("got %+v", ev)
	}
	if ev := oneEvent(t, adapter(t, "google_pubsub"), post(pubsubBody), Config{"type_attribute": "key"}); ev.Type != "google_pubsub.value" {
		t.Errorf("with type_attribute: %q", ev.Type)
	}
	for _, body := range []string{"", "[]", `{"message":{}}`, `{"data":"eA=="}`} {
		_, err := adapter(t, "google_pubsub").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

// pubsubFuzzCase drives Pub/Sub with a pinned key: the fuzzed signature is
// the Authorization value, genuine when it holds a token the test key
// signed (the token does not cover the body).
func pubsubFuzzCase() fuzzCase {
	p := pki(nil)
	return fuzzCase{
		cfg:      Config{"service_account": pubsubAccount, "public_keys": p.pinnedPEM},
		otherKey: Config{"service_account": pubsubAccount, "public_keys": p.otherLeafPEM},
		header:   func(in fuzzInput) http.Header { return headers("Authorization", in.sig) },
		sign: func(in fuzzInput) string {
			return "Bearer " + pubsubJWT(nil, p.key, "k1", "RS256", pubsubClaims(fuzzURL, time.Unix(in.receivedAt, 0)))
		},
		genuine: func(in fuzzInput) bool {
			tok, _ := strings.CutPrefix(strings.TrimSpace(in.sig), "Bearer ")
			parts := strings.Split(strings.TrimSpace(tok), ".")
			if len(parts) != 3 {
				return false
			}
			sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
			d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
			return err == nil && rsa.VerifyPKCS1v15(&p.key.PublicKey, crypto.SHA256, d[:], sig) == nil
		},
	}
}

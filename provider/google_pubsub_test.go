package provider

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// verifiedSoon polls verify until it verifies: go-oidc's key set answers a
// call made just after a fetch with that fetch's result while its own
// goroutine is still putting the fetch away.
func verifiedSoon(t *testing.T, verify func() error) {
	t.Helper()
	err := verify()
	for deadline := time.Now().Add(5 * time.Second); err != nil; err = verify() {
		if time.Now().After(deadline) {
			t.Fatalf("Verify: %v, want nil within 5s", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// pubsubKeyServer serves a JWKS of the keys it holds, as Google's, from
// loopback, counting the fetches.
type pubsubKeyServer struct {
	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetches atomic.Int32
}

func (s *pubsubKeyServer) add(kid string, key *rsa.PublicKey) {
	s.mu.Lock()
	s.keys[kid] = key
	s.mu.Unlock()
}

// servePubSubKeySet serves keys through transport wrap (nil: as is).
func servePubSubKeySet(t *testing.T, keys map[string]*rsa.PublicKey, wrap func(http.RoundTripper) http.RoundTripper) *pubsubKeyServer {
	t.Helper()
	s := &pubsubKeyServer{keys: keys}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		var set []any
		for kid, key := range s.keys {
			set = append(set, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
				"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())})
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	transport := srv.Client().Transport
	if wrap != nil {
		transport = wrap(transport)
	}
	pubsubKeySet = newPubSubKeySet(srv.URL, transport)
	t.Cleanup(func() { srv.Close(); pubsubKeySet = nil })
	return s
}

// Google's keys are fetched again for a token under a key id they lack at
// most once a minute: within it such a token (or one forged under a key
// id they hold) is refused without a fetch; after it, a key Google added
// is read and verifies.
func TestGooglePubSubFetchesGooglesKeysAgainAtMostOnceAMinute(t *testing.T) {
	p := pki(t)
	clock := fakeKeyClock(t)
	s := servePubSubKeySet(t, map[string]*rsa.PublicKey{"k1": &p.key.PublicKey}, nil)
	a := adapter(t, "google_pubsub")
	token := func(key *rsa.PrivateKey, kid string) *Request {
		return pubsubPush(pubsubJWT(t, key, kid, "RS256", pubsubClaims(fuzzURL, received)))
	}
	wantVerified(t, a.Verify(token(p.key, "k1"), nil, pubsubCfg))
	s.add("k2", &p.otherKey.PublicKey)
	for range 3 {
		wantRejected(t, a.Verify(token(p.otherKey, "k2"), nil, pubsubCfg))
		wantRejected(t, a.Verify(token(p.otherKey, "k1"), nil, pubsubCfg))
		wantRejected(t, a.Verify(token(p.otherKey, "k3"), nil, pubsubCfg))
	}
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("fetched %d times within the minute, want once", n)
	}
	clock.Advance(pubsubRefetchEvery)
	verifiedSoon(t, func() error { return a.Verify(token(p.otherKey, "k2"), nil, pubsubCfg) })
	wantVerified(t, a.Verify(token(p.key, "k1"), nil, pubsubCfg))
	wantRejected(t, a.Verify(token(p.otherKey, "k3"), nil, pubsubCfg))
	if n := s.fetches.Load(); n != 2 {
		t.Fatalf("fetched %d times, want once more after a minute", n)
	}
}

// When Google's keys cannot be read (the connection fails, or Google
// answers 5xx or 429), a token is tried again later, not refused, also
// within the minute no fetch is made in; once they can be read, it
// verifies.
func TestGooglePubSubTriesAgainLaterWhenGooglesKeysCannotBeRead(t *testing.T) {
	p := pki(t)
	for _, status := range []int{0, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			clock := fakeKeyClock(t)
			failing := true
			s := servePubSubKeySet(t, map[string]*rsa.PublicKey{"k1": &p.key.PublicKey}, func(next http.RoundTripper) http.RoundTripper {
				return failWith(next, &failing, status)
			})
			push := pubsubPush(pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims(fuzzURL, received)))
			wantTransient(t, adapter(t, "google_pubsub").Verify(push, nil, pubsubCfg))
			failing = false
			clock.Advance(pubsubRefetchEvery - time.Second)
			wantTransient(t, adapter(t, "google_pubsub").Verify(push, nil, pubsubCfg))
			if n := s.fetches.Load(); n != 0 {
				t.Fatalf("fetched %d times within the minute", n)
			}
			clock.Advance(time.Second)
			verifiedSoon(t, func() error { return adapter(t, "google_pubsub").Verify(push, nil, pubsubCfg) })
		})
	}
}

// A connection's pinned keys are parsed once, whatever the number of
// messages they verify.
func TestGooglePubSubParsesPinnedKeysOnce(t *testing.T) {
	p := pki(t)
	servePubSubKeys(t, &p.otherKey.PublicKey, "k1")
	mine := p.pinnedPEM + "\n\n\n" // a text no other test pins
	tok := pubsubJWT(t, p.key, "k1", "RS256", pubsubClaims(fuzzURL, received))
	wantVerified(t, adapter(t, "google_pubsub").Verify(pubsubPush(tok), nil, Config{"service_account": pubsubAccount, "public_keys": mine}))
	if !pubsubPinned.parsed.Contains(sha256.Sum256([]byte(mine))) {
		t.Fatal("the connection's pinned keys were not kept parsed")
	}
}

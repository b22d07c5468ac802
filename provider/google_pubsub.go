package provider

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/intakehq/intake"
)

// googlePubSubAdapter verifies Google Cloud Pub/Sub push deliveries
// (https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions):
// Authorization carries "Bearer <OIDC token>", an RS256 JWT Google signs
// for the subscription's service account, whose iss is Google's, aud the
// subscription's audience (config audience; default the endpoint's public
// URL, as Google defaults it), email the service account (config
// service_account, required: any Google Cloud project could otherwise push
// to the endpoint) with email_verified, and exp judged at receipt. Google's
// keys come from its JWKS (www.googleapis.com/oauth2/v3/certs) only, fetched
// when a key id is new and cached, at most once a minute: a token under a
// key id Google's keys read in the last minute lack is refused (as
// Google's own libraries refuse a key id their cached keys lack), and one
// that finds the keys unreadable (the network, a timeout, a 5xx or 429
// answer) is tried again later. The operator may pin keys (config
// public_keys, PEM certificates or public keys), and then nothing is
// fetched. The connection needs no secret. Each push is one message: id
// messageId, type google_pubsub.message, or google_pubsub.<attribute> with
// config type_attribute.
type googlePubSubAdapter struct{}

func init() { Register(googlePubSubAdapter{}) }

func (googlePubSubAdapter) Name() string { return "google_pubsub" }

// SignsWithOwnKeys marks a provider whose connections need no secret.
func (googlePubSubAdapter) SignsWithOwnKeys() {}

// googleJWKSURL is where Google publishes the keys of its OIDC tokens.
const googleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"

// pubsubKeySet is the key set tests serve from loopback (nil: Google's).
// Nothing outside this package's tests sets it.
var pubsubKeySet oidc.KeySet

var googleKeys = sync.OnceValue(func() oidc.KeySet { return newPubSubKeySet(googleJWKSURL, http.DefaultTransport) })

const (
	// maxJWKSBytes bounds a fetched key set; Google's is ~2 KiB.
	maxJWKSBytes = 256 << 10
	// pubsubRefetchEvery is the least time between two fetches of the
	// keys: a token under a key id they lack (or forged under one they
	// hold) would otherwise make a fetch each.
	pubsubRefetchEvery = time.Minute
)

// pubsubPinned keeps connections' pinned keys parsed.
var pubsubPinned = newPEMCache[[]crypto.PublicKey](pinnedEntries)

// newPubSubKeySet is the cached key set at jwksURL, fetched through base,
// bounded in time and size, at most once per pubsubRefetchEvery, never
// following a redirect.
func newPubSubKeySet(jwksURL string, base http.RoundTripper) oidc.KeySet {
	client := &http.Client{
		Transport:     &refetchGate{next: limitedBodies{base}, every: pubsubRefetchEvery},
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), jwksURL)
}

// refetchGate lets a key set be fetched at most once per every, and turns
// an answer of the moment (5xx, 429) into an error, which the key set
// wraps for Verify to find.
type refetchGate struct {
	next  http.RoundTripper
	every time.Duration

	mu   sync.Mutex
	last time.Time // when the last fetch started; zero before the first
	read bool      // whether it was answered 200
}

// tooSoonError refuses a fetch within the gate's interval of the last.
type tooSoonError struct {
	read bool // whether the last fetch was answered 200
	ago  time.Duration
}

func (e *tooSoonError) Error() string {
	if e.read {
		return fmt.Sprintf("the keys were read %v ago", e.ago.Round(time.Second))
	}
	return fmt.Sprintf("the keys could not be read %v ago", e.ago.Round(time.Second))
}

func (g *refetchGate) RoundTrip(r *http.Request) (*http.Response, error) {
	now := keyClock.Now()
	g.mu.Lock()
	if !g.last.IsZero() && now.Sub(g.last) < g.every {
		err := &tooSoonError{read: g.read, ago: now.Sub(g.last)}
		g.mu.Unlock()
		return nil, err
	}
	g.last, g.read = now, false
	g.mu.Unlock()
	resp, err := g.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		resp.Body.Close()
		return nil, fmt.Errorf("answered %d", resp.StatusCode)
	}
	g.mu.Lock()
	g.read = resp.StatusCode == http.StatusOK
	g.mu.Unlock()
	return resp, nil
}

// limitedBodies cuts every response body at maxJWKSBytes, so a key set
// too large fails to decode instead of filling memory.
type limitedBodies struct{ next http.RoundTripper }

func (l limitedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, maxJWKSBytes), resp.Body}
	return resp, nil
}

// keyCall is one token's use of a key set: it keeps why the key set did not
// verify it, which the verifier's error no longer carries.
type keyCall struct {
	oidc.KeySet
	err error
}

func (k *keyCall) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.KeySet.VerifySignature(ctx, jwt)
	k.err = err
	return payload, err
}

// unverified is provider's error for a token the verifier refused, given
// why the key set of whose keys failed (nil: it did not, or was not asked):
// a fetch refused by the gate after keys were read refuses the token, as
// does a key set that does not verify it; one that could not read the keys
// is transient.
func (k *keyCall) unverified(provider, whose string, err error) error {
	var soon *tooSoonError
	switch {
	case errors.As(k.err, &soon) && soon.read:
		return sigError("%s: the token does not verify under %s keys (%v)", provider, whose, soon)
	case errors.As(k.err, &soon):
		return Transient("%s: %s keys could not be read (%v); tried again later", provider, whose, soon)
	case errors.As(k.err, new(*url.Error)):
		return Transient("%s: %s keys could not be fetched; tried again later", provider, whose)
	}
	return sigError("%s: the token does not verify: %v", provider, err)
}

// pubsubConfig is a connection's settings.
type pubsubConfig struct {
	audience, account, typeAttr string
	pinned                      []crypto.PublicKey
}

func readPubSubConfig(cfg Config) (pubsubConfig, error) {
	var c pubsubConfig
	var err error
	if c.audience, err = stringSetting(cfg, "audience"); err != nil {
		return c, err
	}
	if c.account, err = stringSetting(cfg, "service_account"); err != nil {
		return c, err
	}
	if c.typeAttr, err = stringSetting(cfg, "type_attribute"); err != nil {
		return c, err
	}
	keys, err := stringSetting(cfg, "public_keys")
	if err != nil {
		return c, err
	}
	if keys != "" {
		if c.pinned, err = pubsubPinned.get(keys, parsePublicKeys); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parsePublicKeys reads every certificate's or public key's key of a PEM
// text.
func parsePublicKeys(text []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for {
		var block *pem.Block
		block, text = pem.Decode(text)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, errors.New("config public_keys: a certificate does not parse")
			}
			keys = append(keys, c.PublicKey)
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, errors.New("config public_keys: a public key does not parse")
			}
			keys = append(keys, k)
		default:
			return nil, errors.New("config public_keys: holds something other than certificates and public keys")
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("config public_keys: holds no PEM certificate or public key")
	}
	return keys, nil
}

func (googlePubSubAdapter) ValidateConfig(cfg Config) error {
	c, err := readPubSubConfig(cfg)
	if err != nil {
		return err
	}
	if c.account == "" {
		return errors.New("config service_account: the push subscription's service account email is required")
	}
	return nil
}

func (googlePubSubAdapter) Verify(r *Request, _ [][]byte, cfg Config) error {
	c, err := readPubSubConfig(cfg)
	if err != nil {
		return configError("google_pubsub", err)
	}
	if c.account == "" {
		return configError("google_pubsub", errors.New("config service_account is not set"))
	}
	token, ok := strings.CutPrefix(strings.TrimSpace(headerValue(r.Header, "Authorization")), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return sigError("google_pubsub: Authorization carries no bearer token")
	}
	audience := c.audience
	if audience == "" {
		audience = r.URL
	}
	if audience == "" {
		return sigError("google_pubsub: the public URL is unknown and no audience is set")
	}
	keys := pubsubKeySet
	switch {
	case len(c.pinned) > 0:
		keys = &oidc.StaticKeySet{PublicKeys: c.pinned}
	case keys == nil:
		keys = googleKeys()
	}
	at := r.ReceivedAt
	if at.IsZero() {
		at = keyClock.Now()
	}
	call := &keyCall{KeySet: keys}
	v := oidc.NewVerifier("https://accounts.google.com", call, &oidc.Config{
		ClientID: audience, SkipIssuerCheck: true, SupportedSigningAlgs: []string{oidc.RS256},
		Now: func() time.Time { return at },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tok, err := v.Verify(ctx, strings.TrimSpace(token))
	if err != nil {
		return call.unverified("google_pubsub", "Google's", err)
	}
	if tok.Issuer != "https://accounts.google.com" && tok.Issuer != "accounts.google.com" {
		return sigError("google_pubsub: the token's issuer is not Google")
	}
	var claims struct {
		Email    string `json:"email"`
		Verified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil || !claims.Verified || !strings.EqualFold(claims.Email, c.account) {
		return sigError("google_pubsub: the token is not for the configured service account")
	}
	return nil
}

func (googlePubSubAdapter) Interpret(r *Request, cfg Config) (Interpretation, error) {
	c, err := readPubSubConfig(cfg)
	if err != nil {
		return Interpretation{}, configError("google_pubsub", err)
	}
	m, err := decodeObject(r.Body)
	if err != nil {
		return Interpretation{}, Permanent("google_pubsub: body is not a JSON object: %v", err)
	}
	msg, _ := m["message"].(map[string]any)
	if msg == nil {
		return Interpretation{}, Permanent("google_pubsub: body holds no message (unwrapped delivery is not read)")
	}
	id := firstNonEmpty(idString(msg["messageId"]), idString(msg["message_id"]))
	if id == "" {
		return Interpretation{}, Permanent("google_pubsub: the message has no messageId")
	}
	kind := "message"
	if c.typeAttr != "" {
		if v := str(msg, "attributes", c.typeAttr); v != "" {
			kind = typeSegment(v)
		}
	}
	spec := EventSpec{
		// Pub/Sub redelivers a message with the same messageId.
		ProviderEventID: id,
		Type:            "google_pubsub." + kind,
		Kind:            intake.KindEvent,
		OccurredAt:      firstTime(unixTime(msg["publishTime"]), unixTime(msg["publish_time"])),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "subscription"))
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(msg, "orderingKey"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}

// firstNonEmpty is the first non-empty string.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

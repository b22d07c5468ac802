package provider

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
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
// when a key id is new and cached; the operator may pin keys (config
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

// maxJWKSBytes bounds a fetched key set; Google's is ~2 KiB.
const maxJWKSBytes = 256 << 10

// newPubSubKeySet is the cached key set at jwksURL, fetched through base,
// bounded in time and size, never following a redirect.
func newPubSubKeySet(jwksURL string, base http.RoundTripper) oidc.KeySet {
	client := &http.Client{
		Transport:     limitedBodies{base},
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), jwksURL)
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
		if c.pinned, err = parsePublicKeys([]byte(keys)); err != nil {
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
		at = time.Now()
	}
	v := oidc.NewVerifier("https://accounts.google.com", keys, &oidc.Config{
		ClientID: audience, SkipIssuerCheck: true, SupportedSigningAlgs: []string{oidc.RS256},
		Now: func() time.Time { return at },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tok, err := v.Verify(ctx, strings.TrimSpace(token))
	if err != nil {
		return sigError("google_pubsub: the token does not verify: %v", err)
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

package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// admin speaks intake's admin API with the staff token.
type admin struct {
	base  string
	token string
	http  *http.Client
}

// statusError is a non-2xx answer of the admin API.
type statusError struct {
	method string
	path   string
	status int
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, strings.TrimSpace(e.body))
}

func (a *admin) post(path string, in, out any) error { return a.do(http.MethodPost, path, in, out) }

// do sends in as JSON (nothing when in is nil) and decodes the answer into
// out.
func (a *admin) do(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	respBody, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(respBody)}
	}
	return json.Unmarshal(respBody, out)
}

// setup is what intake-bench creates on the server: an org, a connection of
// the chosen provider and an endpoint without a rate limit.
type setup struct {
	orgID     string
	token     string // the endpoint's, in its URL /webhooks/{token}
	sign      signer
	eventType string // the type intake gives the webhooks sent
	// With --provider mix: a connection and endpoint per provider, and the
	// types their samples have; token and eventType are then unused.
	routes     []mixRoute
	eventTypes []string
}

// setUp creates a fresh org, connection and endpoint, named so that
// repeated runs against one server do not collide.
func setUp(a *admin, provider string, bodyBytes int) (*setup, error) {
	name := "bench-" + time.Now().UTC().Format("20060102-150405.000")
	var org struct {
		ID string `json:"id"`
	}
	if err := a.post("/api/v1/orgs", map[string]any{"name": name}, &org); err != nil {
		return nil, err
	}
	b := &setup{orgID: org.ID}
	if provider == "mix" {
		for _, p := range mixProviders {
			secret := mixSecret(p)
			token, err := connect(a, map[string]any{"org_id": org.ID, "provider": p, "name": name + "-" + p, "secrets": []string{secret}}, bodyBytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			b.routes = append(b.routes, mixRoute{provider: p, secret: secret, path: "/webhooks/" + token})
		}
		b.eventType, b.eventTypes = "mix", mixTypes()
		return b, nil
	}
	conn := map[string]any{"org_id": org.ID, "provider": provider, "name": name}
	switch provider {
	case "github":
		secret := rand.Text()
		conn["secrets"] = []string{secret}
		b.sign = githubSigner([]byte(secret))
		b.eventType = "github.push"
	case "none":
		// Each body carries its own id, so no two are duplicates.
		conn["config"] = map[string]any{"id_field": "id"}
		b.eventType = "none.message"
	default:
		return nil, fmt.Errorf("provider %q: want github, none or mix", provider)
	}
	token, err := connect(a, conn, bodyBytes)
	if err != nil {
		return nil, err
	}
	b.token = token
	return b, nil
}

// connect creates the connection conn and an endpoint without a rate limit
// for it, and returns the endpoint's token.
func connect(a *admin, conn map[string]any, bodyBytes int) (string, error) {
	var c struct {
		ID string `json:"id"`
	}
	if err := a.post("/api/v1/connections", conn, &c); err != nil {
		return "", err
	}
	ep := map[string]any{"connection_id": c.ID, "rate_per_sec": 0}
	if bodyBytes > 1<<20 {
		ep["max_body_bytes"] = bodyBytes
	}
	var e struct {
		Token string `json:"token"`
	}
	if err := a.post("/api/v1/endpoints", ep, &e); err != nil {
		return "", err
	}
	// Not the URL the server answers with: that is built from its public
	// URL, which may not be where this process reaches it.
	return e.Token, nil
}

// githubSigner signs as GitHub does: HMAC-SHA256 of the body, and a unique
// delivery id per request.
func githubSigner(secret []byte) signer {
	return func(h http.Header, id string, body []byte) {
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		h.Set("X-GitHub-Delivery", id)
		h.Set("X-GitHub-Event", "push")
	}
}

// errNoConsumers means the server has no consumer routing yet.
var errNoConsumers = errors.New("POST /api/v1/consumers answered 404: this intake has no consumer routing")

// benchFilter accepts every event the bench sends, after reading its
// headers and data as a real filter would.
const benchFilter = `event.type.startsWith("github.") && headers["x-github-event"] == "push" && has(event.data.id)`

// benchTransform is a 10-line reshaping that keeps provider_event_id, which
// the bench's consumer matches deliveries on.
const benchTransform = `function transform(event, context) {
  var d = event.data || {};
  var summary = {
    id: d.id,
    bytes: (d.pad || "").length,
    received: event.received_at,
  };
  return {body: {provider_event_id: event.provider_event_id, type: event.type,
    summary: summary, attempt: context.attempt}, headers: {"X-Bench": "rules"}};
}`

// registerConsumer subscribes url, named name, to the bench's events, with
// the bench's rules when withRules, and returns its id.
func registerConsumer(a *admin, b *setup, name, url string, withRules bool) (string, error) {
	c, err := registerSigningConsumer(a, b, name, url, withRules)
	return c.ID, err
}

// registered is a consumer registered: its id and signing secret.
type registered struct {
	ID            string `json:"id"`
	SigningSecret string `json:"signing_secret"`
}

// registerSigningConsumer is registerConsumer, returning the consumer's
// signing secret too.
func registerSigningConsumer(a *admin, b *setup, name, url string, withRules bool) (registered, error) {
	var out registered
	req := map[string]any{
		"org_id": b.orgID, "name": name, "app": "intake-bench", "url": url,
		"event_types": []string{b.eventType}, "completion": false,
	}
	if b.eventTypes != nil {
		req["event_types"] = b.eventTypes
	}
	if withRules {
		req["filter"], req["transform"] = benchFilter, benchTransform
	}
	err := a.post("/api/v1/consumers", req, &out)
	var se *statusError
	if errors.As(err, &se) && se.status == http.StatusNotFound {
		return out, errNoConsumers
	}
	return out, err
}

// pauseConsumer holds the consumer's deliveries.
func pauseConsumer(a *admin, id string) error {
	var out struct{}
	return a.post("/api/v1/consumers/"+id+"/pause", nil, &out)
}

// limitConsumer caps the consumer's calls at perSec.
func limitConsumer(a *admin, id string, perSec float64) error {
	var out struct{}
	return a.do(http.MethodPatch, "/api/v1/consumers/"+id, map[string]any{"rate_per_sec": perSec}, &out)
}

// consumerHeld is how many of the consumer's routes are held.
func consumerHeld(a *admin, id string) (int, error) {
	var h struct {
		Held int `json:"held"`
	}
	err := a.do(http.MethodGet, "/api/v1/consumers/"+id+"/health", nil, &h)
	return h.Held, err
}

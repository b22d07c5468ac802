// Package provider holds one adapter per webhook provider: how to verify a
// stored request's signature, how to interpret it into typed events, and
// which inline handshakes to answer at ingress.
package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/intakehq/intake"
)

// Request is a stored webhook request as an adapter sees it.
type Request struct {
	Method     string
	URL        string // the public URL the provider was given, for URL-signing schemes
	Query      url.Values
	Header     http.Header
	Body       []byte
	ReceivedAt time.Time // the original receipt time; tolerances are judged against it
	// Org is the org whose message r is: what an adapter fetches while
	// verifying is budgeted per org, so one org's forgeries never spend
	// another's fetches.
	Org string
}

// Config is a connection's provider settings, decoded from its JSON config.
type Config map[string]any

// Duration returns the duration setting key ("5m", or seconds as a number),
// or def when absent.
func (c Config) Duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case string:
		d, err := time.ParseDuration(x)
		if err != nil {
			return 0, fmt.Errorf("config %s: %w", key, err)
		}
		return d, nil
	case float64:
		return time.Duration(x * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("config %s: want a duration", key)
}

// String returns the string setting key, or def when absent.
func (c Config) String(key, def string) string {
	if v, ok := c[key].(string); ok {
		return v
	}
	return def
}

// ParseConfig decodes a connection's config JSON.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c := Config{}
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// EventSpec is one event an adapter read from a request.
type EventSpec struct {
	ProviderEventID string
	Type            string // "<provider>.<provider type>"
	Kind            intake.EventKind
	OccurredAt      time.Time // zero: the message's received time
	Data            json.RawMessage
	DataTruncated   bool
	ObjectIDs       []string // provider object ids, for subject links
}

// Interpretation is what a verified request means.
type Interpretation struct {
	// ProviderEventID identifies the whole message for deduplication; empty
	// when the provider sends none.
	ProviderEventID string
	EventType       string
	Kind            intake.EventKind
	// Challenge is true for a handshake answered at ingress: the message
	// settles processed with outcome challenge and no events.
	Challenge bool
	Events    []EventSpec
}

// Challenge is an inline answer a provider expects instead of the receipt.
type Challenge struct {
	Status      int
	ContentType string
	// Header holds further response headers a handshake needs: Asana's
	// X-Hook-Secret echo, Dropbox's X-Content-Type-Options. Nil for most.
	Header http.Header
	Body   []byte
}

// ErrSignature means the request is not proven to come from the provider.
var ErrSignature = errors.New("signature does not verify")

// PermanentError marks a request that will never interpret, however often it
// is retried.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as permanent.
func Permanent(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// TransientError marks a request that could not be verified for a reason
// of the moment: the provider's keys could not be fetched, or too many new
// ones were asked for lately. It says nothing of the request; the worker
// tries it again later, spending one of its attempts.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err as transient.
func Transient(format string, args ...any) error {
	return &TransientError{Err: fmt.Errorf(format, args...)}
}

// Adapter verifies and interprets one provider's webhooks.
type Adapter interface {
	// Name is the provider code, the prefix of its event types.
	Name() string
	// ValidateConfig checks a connection's config when it is created.
	ValidateConfig(cfg Config) error
	// Verify returns nil if any of secrets signed r, ErrSignature (possibly
	// wrapped) if none did, a *TransientError if it cannot tell now (keys
	// it must fetch could not be).
	Verify(r *Request, secrets [][]byte, cfg Config) error
	// Interpret reads a verified request.
	Interpret(r *Request, cfg Config) (Interpretation, error)
}

// Challenger is an adapter that answers a handshake at ingress. ok is false
// when r is an ordinary delivery. secrets are the connection's, for
// providers whose answer depends on verification (a 401 for a bad
// signature, or a handshake that proves the secret); the request is stored
// whatever the answer.
type Challenger interface {
	Challenge(r *Request, secrets [][]byte, cfg Config) (c Challenge, ok bool)
}

// HandshakeSecreter is an adapter whose provider hands its signing secret
// over in a handshake (Asana's X-Hook-Secret) instead of showing it to the
// user. A connection of such a provider may be created without secrets and
// take each one from a recorded handshake.
type HandshakeSecreter interface {
	// HandshakeSecret is the secret r carries, "" when r is no handshake.
	HandshakeSecret(r *Request) string
}

// OwnKeysSigner is an adapter whose provider signs with keys it publishes
// (AWS SNS's certificates), so a connection of it needs no secret.
type OwnKeysSigner interface {
	SignsWithOwnKeys()
}

var registry = map[string]Adapter{}

// Register adds an adapter; each provider file registers itself in init.
func Register(a Adapter) {
	if _, dup := registry[a.Name()]; dup {
		panic("provider: duplicate adapter " + a.Name())
	}
	registry[a.Name()] = a
}

// Lookup returns the adapter for a provider code.
func Lookup(name string) (Adapter, bool) {
	a, ok := registry[name]
	return a, ok
}

// Names lists the registered provider codes, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

package intake

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Org is a tenant. Every other row belongs to exactly one.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
	// BodyRetention and Retention override the server's retention for this
	// org's bodies and rows; zero keeps the server's.
	BodyRetention time.Duration
	Retention     time.Duration
	// Version counts the row's changes: an update is written only over the
	// version it read (compare-and-set), so two racing changes never lose
	// each other.
	Version int64
}

// MaxRetention bounds an org's retention settings.
const MaxRetention = 400 * 24 * time.Hour

// APIKey is an org's credential for the admin API. Only its SHA-256 is
// stored; Prefix, its first characters, lets people tell keys apart.
type APIKey struct {
	ID     string
	OrgID  string
	Prefix string
	Hash   []byte
	// Name says who or what holds the key (up to MaxKeyNameBytes); "" for
	// none.
	Name string
	// Role is what the key may do in its org; zero is RoleAdmin, as keys
	// were before roles.
	Role      Role
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key works
}

// MaxKeyNameBytes bounds an API key's name.
const MaxKeyNameBytes = 100

// CheckKeyName refuses a key name over MaxKeyNameBytes or one that is not
// printable text.
func CheckKeyName(name string) error {
	if len(name) > MaxKeyNameBytes {
		return Errorf(EINVALID, "name must be at most %d bytes", MaxKeyNameBytes)
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return Errorf(EINVALID, "name must be printable text")
	}
	return nil
}

// Connection is an org's link to one provider account: which adapter
// verifies its webhooks, and with which secrets.
type Connection struct {
	ID            string
	OrgID         string
	Provider      string
	Name          string
	SealedSecrets []byte          // AES-256-GCM under the master key; never leaves the server
	Config        json.RawMessage // provider settings (tolerance, hmac scheme, script, …)
	CreatedAt     time.Time
	// Filter is a CEL expression each interpreted event must pass to be
	// created at all; empty: every event.
	Filter string
	// FormerCredentialHeaders are header names the config made credentials
	// before a change (Okta's auth_header renamed): messages stored then
	// carry them, so they stay hidden.
	FormerCredentialHeaders []string
	// Version counts the row's changes: an update is written only over the
	// version it read (compare-and-set), so two racing changes never lose
	// each other.
	Version int64
}

// Endpoint defaults.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultRatePerSec   = 500
	DefaultBurst        = 1000
)

// Endpoint is an ingress address of a connection. Only the SHA-256 of its
// token is stored, so a database leak does not hand out working URLs.
type Endpoint struct {
	ID           string
	OrgID        string
	ConnectionID string
	// Name tells an org's endpoints apart and is what `intake apply` matches
	// them by; empty: unnamed, left alone by apply.
	Name      string
	Provider  string // the connection's provider, for ingress-time challenges
	TokenHash []byte
	// SealedToken lets the worker rebuild the URL the provider was given,
	// which URL-signing providers (Twilio) sign; it is never shown again.
	SealedToken []byte
	// PreviousTokenHash is the token a rotation replaced, which still
	// addresses the endpoint until PreviousExpiresAt; nil: none. Its
	// sealed token rebuilds the URL the messages sent to it were signed
	// with.
	PreviousTokenHash   []byte
	PreviousSealedToken []byte
	PreviousExpiresAt   time.Time
	Enabled             bool
	MaxBodyBytes        int64
	RatePerSec          float64 // 0 = no limit
	Burst               int
	CreatedAt           time.Time
	// Version counts the row's changes: an update is written only over the
	// version it read (compare-and-set), so two racing changes never lose
	// each other.
	Version int64
}

// How long a rotated endpoint token keeps working beside its successor.
const (
	DefaultTokenOverlap = 24 * time.Hour
	MaxTokenOverlap     = 168 * time.Hour
)

// AddressedBy reports whether a token with this hash reaches the endpoint
// at now: its current token, or the one a rotation replaced until its
// overlap ends.
func (e Endpoint) AddressedBy(tokenHash []byte, now time.Time) bool {
	if bytes.Equal(tokenHash, e.TokenHash) {
		return true
	}
	return len(e.PreviousTokenHash) > 0 && bytes.Equal(tokenHash, e.PreviousTokenHash) && now.Before(e.PreviousExpiresAt)
}

// RotateToken gives the endpoint a new token; the current one keeps working
// for overlap (0 to MaxTokenOverlap). At most two tokens live: a token an
// earlier rotation left working ends at once.
func (e Endpoint) RotateToken(tokenHash, sealedToken []byte, now time.Time, overlap time.Duration) (Endpoint, error) {
	if overlap < 0 || overlap > MaxTokenOverlap {
		return e, Errorf(EINVALID, "overlap must be a duration from 0 to %s", "168h")
	}
	e.PreviousTokenHash, e.PreviousSealedToken, e.PreviousExpiresAt = e.TokenHash, e.SealedToken, now.Add(overlap)
	e.TokenHash, e.SealedToken = tokenHash, sealedToken
	return e, nil
}

// Validate checks the endpoint's limits; a body may be up to maxBody
// bytes (MaxBodyBytes, or MaxBlobBodyBytes with a blob store).
func (e *Endpoint) Validate(maxBody int64) error {
	if e.MaxBodyBytes <= 0 || e.MaxBodyBytes > maxBody {
		if maxBody < MaxBlobBodyBytes {
			return Errorf(EINVALID, "max_body_bytes must be between 1 and %d (up to %d with a blob store)", maxBody, MaxBlobBodyBytes)
		}
		return Errorf(EINVALID, "max_body_bytes must be between 1 and %d", maxBody)
	}
	if e.RatePerSec < 0 {
		return Errorf(EINVALID, "rate_per_sec must not be negative")
	}
	if e.RatePerSec > 0 && e.Burst < 1 {
		return Errorf(EINVALID, "burst must be at least 1 when a rate is set")
	}
	return nil
}

// DeleteKind names what Store.Delete removes.
type DeleteKind string

// Things an operator can delete.
const (
	DeleteConnection DeleteKind = "connection"
	DeleteEndpoint   DeleteKind = "endpoint"
	DeleteConsumer   DeleteKind = "consumer"
	// DeleteOrg deletes an org with its connections, endpoints and
	// consumers: its endpoints stop and its keys no longer authenticate.
	DeleteOrg DeleteKind = "org"
)

// Scope limits a query to one org; the zero Scope (staff) sees every org.
type Scope struct {
	OrgID string
}

// Staff reports whether the scope crosses orgs.
func (s Scope) Staff() bool { return s.OrgID == "" }

// Allows reports whether a row of org orgID is visible in this scope.
func (s Scope) Allows(orgID string) bool { return s.OrgID == "" || s.OrgID == orgID }

// CheckName refuses empty and overlong names (of orgs, connections,
// consumers, apps, records).
func CheckName(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return Errorf(EINVALID, "%s is required", field)
	}
	if len(v) > 200 {
		return Errorf(EINVALID, "%s must be at most 200 bytes", field)
	}
	return nil
}

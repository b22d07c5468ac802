// Package control is intake's control plane: every operator action, written
// once. Each action authorizes the caller, validates its input, mints and
// seals what it needs, writes the change together with its audit entry in
// one store transaction, and leaves the store to announce it. The admin
// API, the console and `intake apply` only decode a request, call a method
// here, and encode the answer; HTTPStatus is their one map from error codes
// to statuses.
package control

import (
	"cmp"
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/cache"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/rules"
)

// Config is what the control plane needs. Store and Sealer are required;
// the rest have working zero values.
type Config struct {
	Store      intake.Store
	Sealer     *seal.Sealer
	StaffToken string // empty: no staff access
	PublicURL  string // where providers reach ingress, for endpoint URLs
	Clock      intake.Clock
	// ConsumerPolicy checks consumer URLs when they are registered (the
	// zero Policy refuses nothing); the router checks again at connect time.
	ConsumerPolicy delivery.Policy
	// Brokers are the destinations other than HTTP a consumer's url may
	// name (delivery/broker's, wired by serve); nil: HTTP only. The plane
	// checks their urls and needs no broker's client for it.
	Brokers delivery.Brokers
	// Rules checks filters and scripts when they are saved, and runs dry
	// runs; nil: an engine with the default bounds.
	Rules *rules.Engine
	// MaxBodyRetention and MaxRetention are the server's --body-retention
	// and --retention: an org's own settings may not exceed them, so no
	// tenant makes the server keep more than its operator chose (zero:
	// intake.MaxRetention).
	MaxBodyRetention time.Duration
	MaxRetention     time.Duration
	// Sender makes a consumer's test deliveries (the router's, so a
	// broker's connection is the one deliveries use); nil: one of its own
	// under ConsumerPolicy, to Brokers.
	Sender *delivery.Sender
	// People maps the groups of people who sign in with single sign-on to
	// staff, or to an org and a role (--oidc-map); empty: nobody may.
	People intake.PeopleMap
	// Blobs, when set, is where bodies too large for the database are
	// kept: reads of them stream from it, and endpoints may take bodies up
	// to intake.MaxBlobBodyBytes.
	Blobs intake.Blobs
	// Reads bounds operators' reads; zero fields take DefaultReadBudget's.
	Reads ReadBudget
	// Calls bounds consumer tests and raw body reads; zero fields take
	// DefaultCallBounds'.
	Calls CallBounds
	// Replica tells how the embedded store's replica stands (--replicate),
	// for staff's overview; nil: the store is not replicated.
	Replica func() intake.ReplicaState
	// BulkMax is the most rows a bulk replay or re-route takes at once
	// (default DefaultBulkMax): past it the search is refused, to be
	// narrowed, unless confirmed, and then runs as a job.
	BulkMax int
	// MaxBodyBytes is the server's --max-body-bytes: an endpoint's
	// max_body_bytes may not exceed it, so no org makes the server hold
	// larger bodies than its operator chose (zero: intake.MaxBodyBytes, or
	// intake.MaxBlobBodyBytes with Blobs).
	MaxBodyBytes int64
	Logger       *slog.Logger
}

// Plane performs operator actions on a store.
type Plane struct {
	store     intake.Store
	sealer    *seal.Sealer
	staffHash []byte
	publicURL string
	clock     intake.Clock
	policy    delivery.Policy
	brokers   delivery.Brokers
	rules     *rules.Engine
	maxBody   time.Duration // an org's body_retention at most
	maxRows   time.Duration // an org's retention at most
	sender    *delivery.Sender
	people    intake.PeopleMap
	blobs     intake.Blobs
	budgets   budgets
	lookups   *fair.Budget                 // credential lookups, per client address
	keys      cache.TTL[string, cachedKey] // found keys, by hash
	bodyCap   int64                        // an endpoint's max_body_bytes at most; 0: the store's maximum
	replica   func() intake.ReplicaState   // nil: the store is not replicated
	log       *slog.Logger
}

// New returns the control plane for cfg.
func New(cfg Config) *Plane {
	p := &Plane{
		store:     cfg.Store,
		sealer:    cfg.Sealer,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"),
		clock:     cfg.Clock,
		policy:    cfg.ConsumerPolicy,
		brokers:   cfg.Brokers,
		rules:     cfg.Rules,
		maxBody:   cmp.Or(cfg.MaxBodyRetention, intake.MaxRetention),
		maxRows:   cmp.Or(cfg.MaxRetention, intake.MaxRetention),
		sender:    cfg.Sender,
		people:    cfg.People,
		blobs:     cfg.Blobs,
		budgets:   newBudgets(cfg.Reads, cfg.Calls, cfg.BulkMax),
		lookups:   newLookups(),
		bodyCap:   cfg.MaxBodyBytes,
		replica:   cfg.Replica,
		log:       cfg.Logger,
	}
	p.keys.TTL = keyTTL
	if p.store != nil {
		p.keys.Changes = p.store.Changes()
	}
	if p.sender == nil {
		p.sender = delivery.NewSender(delivery.Options{Policy: cfg.ConsumerPolicy, Brokers: cfg.Brokers})
	}
	if cfg.StaffToken != "" {
		p.staffHash = token.Hash(cfg.StaffToken)
	}
	if p.clock == nil {
		p.clock = intake.SystemClock{}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.rules == nil {
		e, err := rules.New(rules.Config{}, p.clock)
		if err != nil {
			panic(err) // the default CEL environment always builds
		}
		p.rules = e
	}
	return p
}

// Caller is who performs an action: the scope it may see and act in, and
// the actor the audit log names.
type Caller struct {
	Scope intake.Scope
	// Actor is "staff", an org key's first characters ("key:ik_a1b2c3"):
	// enough to tell keys apart, too few to use one, or a person signed in
	// with single sign-on ("person:alice@example.com").
	Actor string
	// OrgName names an org key's org, for display.
	OrgName string
	// Role is what an org caller may do in its org; staff has none and
	// may do everything.
	Role intake.Role
}

// Staff reports whether the caller holds the staff token.
func (c Caller) Staff() bool { return c.Scope.Staff() }

// keyPrefixLen is how much of an org key is kept in the clear to tell keys
// apart: "ik_" and six random characters (36 bits of the 256).
const keyPrefixLen = len(apiKeyPrefix) + 6

// apiKeyPrefix marks org API keys, so a leaked one is recognisable.
const apiKeyPrefix = "ik_"

// Authenticate turns a token client sent into a caller: the staff token
// sees every org, an org's unrevoked API key its own. Anything else is
// EUNAUTHORIZED. Keys are looked up within client's budget (LookUp).
func (p *Plane) Authenticate(ctx context.Context, client, tok string) (Caller, error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return Caller{}, intake.Errorf(intake.EUNAUTHORIZED, "a token is required: the staff token or an org's API key")
	}
	return p.AuthenticateHash(ctx, client, token.Hash(tok), keyActor(tok))
}

// AuthenticateHash is Authenticate for a credential known by its SHA-256
// alone (a console session keeps no credential), naming it actor.
func (p *Plane) AuthenticateHash(ctx context.Context, client string, hash []byte, actor string) (Caller, error) {
	// Comparing hashes keeps the comparison constant-time whatever the lengths.
	if p.staffHash != nil && subtle.ConstantTimeCompare(hash, p.staffHash) == 1 {
		return Caller{Actor: "staff"}, nil
	}
	k, err := p.keyOf(ctx, client, hash)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		return Caller{}, intake.Errorf(intake.EUNAUTHORIZED, "invalid token")
	}
	if err != nil {
		return Caller{}, err
	}
	return Caller{Scope: intake.Scope{OrgID: k.org.ID}, Actor: actor, OrgName: k.org.Name, Role: k.role}, nil
}

// keyActor names an org key in the audit log.
func keyActor(tok string) string {
	if len(tok) > keyPrefixLen {
		tok = tok[:keyPrefixLen]
	}
	return "key:" + tok
}

// may refuses (EFORBIDDEN) a caller whose role is below need. Every
// exported action and read of the Plane asks it first, naming the least
// role it needs (DESIGN §17): viewers read, operators also act on traffic,
// admins also configure; what is staff's alone asks RequireStaff instead.
// This is the one place a role is judged (TestEveryControlActionRefuses…
// holds every method to its row); the transports only show or hide what it
// would refuse. Staff is above every org and may do everything; an org's
// caller without a role may do nothing.
func (c Caller) may(need intake.Role) error {
	if c.Staff() || c.Role.Allows(need) {
		return nil
	}
	if c.Role == "" {
		return intake.Errorf(intake.EFORBIDDEN, "this needs the %s role; %s has no role", need, c.Actor)
	}
	return intake.Errorf(intake.EFORBIDDEN, "this needs the %s role; %s is a %s", need, c.Actor, c.Role)
}

// Can reports whether the caller may do what needs at least need (one of
// intake.Roles): for a transport to hide what the Plane would refuse.
func (c Caller) Can(need intake.Role) bool {
	return slices.Contains(intake.Roles, need) && c.may(need) == nil
}

// RequireStaff refuses org API keys: for what only staff may see or do.
func (c Caller) RequireStaff() error {
	if !c.Staff() {
		return intake.Errorf(intake.EFORBIDDEN, "only the staff token may do this")
	}
	return nil
}

// orgFor decides which org a create acts in: an org key acts in its own
// (orgID may be empty); staff must name one (the store refuses one that does
// not exist).
func orgFor(c Caller, orgID string) (string, error) {
	if !c.Staff() {
		if orgID != "" && orgID != c.Scope.OrgID {
			return "", intake.Errorf(intake.EFORBIDDEN, "an org's API key acts in its own org only")
		}
		return c.Scope.OrgID, nil
	}
	if orgID == "" {
		return "", intake.Errorf(intake.EINVALID, "org_id is required with the staff token")
	}
	return orgID, intake.CheckID("org_id", orgID)
}

// entry is the audit entry of an action: committed with it, in the same
// transaction.
func (p *Plane) entry(c Caller, orgID, action, targetType, targetID string, detail ...any) intake.AuditEntry {
	return intake.AuditEntry{
		ID: intake.NewID(), OrgID: orgID, Actor: c.Actor, Action: action,
		TargetType: targetType, TargetID: targetID, Detail: fmt.Sprint(detail...), At: p.now(),
	}
}

func (p *Plane) now() time.Time { return p.clock.Now().UTC() }

// Package fanout decides who gets an event (DESIGN §24): it selects an
// event's consumers, judges their filters, computes their ordering keys,
// builds the envelope and the rules' view of the original request (its
// credential headers hidden), keeps the consumers it read for a few
// seconds, and accounts for the process's call slots. serve builds one
// Judger and gives it to the worker, which has each message's fan-out
// judged before the settle that creates its events, and to the router,
// which fans out the events no settle did and makes the calls: the worker
// and the router meet here and at the hand-off, never in each other.
package fanout

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/cache"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/rules"
)

// Store is what a Judger reads: each org's consumers, the original
// requests their rules read, and the connections whose config makes some
// of a request's headers credentials.
type Store interface {
	ListConsumers(ctx context.Context, sc intake.Scope) ([]intake.Consumer, error)
	MessageRequests(ctx context.Context, messageIDs []string) (map[string]intake.OriginalRequest, error)
	Connection(ctx context.Context, sc intake.Scope, id string) (intake.Connection, error)
	intake.ChangeFeed
}

// Config wires a Judger.
type Config struct {
	Store Store
	// BodyURLs signs the raw-body address sent with events whose data was
	// truncated.
	BodyURLs bodyurl.Signer
	Clock    intake.Clock
	// Lease is how long a call a fan-out leases may run (the router's
	// lease; default 1m).
	Lease time.Duration
	// MaxEvents bounds the calls this process has in flight (default
	// 256). An org may hold only its share of them
	// (intake.CallShares.OrgShare), so another org always finds room.
	MaxEvents int
	// ConsumerShare bounds the calls one consumer may have in flight in
	// this process unless it sets its own max_in_flight, which the store
	// holds across processes (default DefaultConsumerShare).
	ConsumerShare int
	// Pressure, when set, is ingest's: while requests wait for their
	// commits above its threshold, only a share of the call slots is used.
	Pressure *pressure.Gauge
	// Rules runs consumers' filters and ordering keys; nil: an engine with
	// the default bounds.
	Rules   *rules.Engine
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Judger judges fan-outs and holds the process's call slots.
type Judger struct {
	cfg   Config
	slots *callSlots
	// consumers keeps each org's consumers for a few seconds, voided by
	// any operator change.
	consumers cache.TTL[string, []intake.Consumer]
	// credentials keeps the header names each connection makes
	// credentials, hidden from the rules' view of its requests.
	credentials cache.TTL[string, []string]
	// woken are signalled (coalesced) whenever call slots come free.
	wokenMu sync.Mutex
	woken   []chan<- struct{}
}

// consumersTTL bounds how long a missed change notification could leave an
// org's consumers stale.
const consumersTTL = 5 * time.Second

// New returns a Judger with defaults filled in.
func New(cfg Config) *Judger {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 256
	}
	if cfg.ConsumerShare == 0 {
		cfg.ConsumerShare = DefaultConsumerShare
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Rules == nil {
		e, err := rules.New(rules.Config{}, cfg.Clock)
		if err != nil {
			panic(err) // the default CEL environment always builds
		}
		cfg.Rules = e
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Judger{cfg: cfg, slots: newCallSlots(cfg.MaxEvents, cfg.ConsumerShare)}
	j.consumers.TTL, j.consumers.Changes = consumersTTL, cfg.Store.Changes()
	j.credentials.TTL, j.credentials.Changes = consumersTTL, cfg.Store.Changes()
	return j
}

// Count adds one call (or decision to make none) to the delivery metrics.
func (j *Judger) Count(consumerID string, outcome string) {
	j.cfg.Metrics.Deliveries.WithLabelValues(outcome).Inc()
	j.cfg.Metrics.ConsumerOutcome(consumerID, outcome)
}

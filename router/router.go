// Package router routes events to consumers in two stages. The fan-out
// selects each new event's consumers, runs their filters and ordering
// keys, and writes one route per consumer; the routes to consumers that
// nothing holds back come back leased and are called at once. The worker
// has it judged (Judge) before the settle that creates the events, which
// writes it with them and hands the calls it leased back (handoff.Calls);
// an event no settle fanned out is fanned out on a claim of its own. The
// delivery stage claims due routes (each consumer's share, as its pause,
// rate, concurrency limit, ordering and breaker allow), calls the consumer
// and settles the call on its route alone.
package router

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/cache"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/internal/tracing"
	"github.com/intakehq/intake/rules"
)

// Config wires a Router.
type Config struct {
	Store  intake.EventQueue
	Sealer *seal.Sealer
	Sender *delivery.Sender
	// BodyURLs signs the raw-body address sent with events whose data was
	// truncated.
	BodyURLs bodyurl.Signer
	Clock    intake.Clock
	// Backoff is the server's retry schedule; a consumer's own retry
	// controls adjust it.
	Backoff intake.Backoff
	Lease   time.Duration // must exceed the delivery timeout (default 1m)
	Poll    time.Duration // fallback poll (default 1s)
	Batch   int           // events or routes claimed per round (default 64)
	// MaxEvents bounds the calls this process has in flight (default
	// 256). An org may hold only its share of them
	// (intake.CallShares.OrgShare), so another org always finds room.
	MaxEvents int
	// ConsumerShare bounds the calls one consumer may have in flight in
	// this process unless it sets its own max_in_flight, which the store
	// holds across processes (default DefaultConsumerShare).
	ConsumerShare int
	// Calls brings back the first calls of the settles whose fan-outs
	// this router judged (see Judge).
	Calls *handoff.Calls
	// Pressure, when set, is ingest's: while requests wait for their
	// commits above its threshold, both stages take new work only within
	// their share of the slots.
	Pressure *pressure.Gauge
	// Replica, when set, is the replica a call waits for (--replicate-sync):
	// no call goes out before the commits that made its event and leased
	// it are in the replica, so a store restored from it never makes an
	// event a consumer received under another id. While the replica
	// cannot be reached nothing is claimed; a call its settle leased
	// (handed over by the worker) waits for its lease to run out, and is
	// claimed again, that attempt spent, as after a crash.
	Replica Replica
	// Rules runs consumers' filters, ordering keys and transforms; nil: an
	// engine with the default bounds.
	Rules   *rules.Engine
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Replica ships commits off the machine (replica.Replicator).
type Replica interface {
	// Sync returns once every commit made before it was called is in the
	// replica; callers waiting at once share one sync.
	Sync(ctx context.Context) error
}

// Router fans events out and delivers their routes until its context
// ends.
type Router struct {
	cfg   Config
	slots *callSlots
	// freed wakes each stage's loop (coalesced) when a call ends and its
	// slot comes free.
	freed [2]chan struct{}
	// consumers keeps each org's consumers for a few seconds, voided by
	// any operator change.
	consumers cache.TTL[string, []intake.Consumer]
	// credentials keeps the header names each connection makes
	// credentials, hidden from the rules' view of its requests.
	credentials cache.TTL[string, []string]
	// handed counts the calls settles handed over, made outside Run's
	// loops once they stopped (see Wait).
	handed inFlight
}

// inFlight counts calls in flight so that one may wait for none to be: unlike
// a WaitGroup's, its count may rise from zero while another waits.
type inFlight struct {
	mu   sync.Mutex
	n    int
	none *sync.Cond
}

// Go runs f on its own goroutine, counted.
func (c *inFlight) Go(f func()) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			if c.n--; c.n == 0 && c.none != nil {
				c.none.Broadcast()
			}
			c.mu.Unlock()
		}()
		f()
	}()
}

// Wait returns once no call is in flight.
func (c *inFlight) Wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.none == nil {
		c.none = sync.NewCond(&c.mu)
	}
	for c.n > 0 {
		c.none.Wait()
	}
}

// consumersTTL bounds how long a missed change notification could leave an
// org's consumers stale.
const consumersTTL = 5 * time.Second

// New returns a router with defaults filled in.
func New(cfg Config) *Router {
	if cfg.Clock == nil {
		cfg.Clock = intake.SystemClock{}
	}
	if cfg.Backoff.Base == 0 {
		cfg.Backoff = intake.DefaultBackoff
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch == 0 {
		cfg.Batch = 64
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 256
	}
	if cfg.ConsumerShare == 0 {
		cfg.ConsumerShare = DefaultConsumerShare
	}
	if cfg.Sender == nil {
		cfg.Sender = delivery.NewSender(delivery.Options{Policy: delivery.DefaultPolicy()})
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
	r := &Router{cfg: cfg, slots: newCallSlots(cfg.MaxEvents, cfg.ConsumerShare), freed: [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}}
	r.consumers.TTL, r.consumers.Changes = consumersTTL, cfg.Store.Changes()
	r.credentials.TTL, r.credentials.Changes = consumersTTL, cfg.Store.Changes()
	return r
}

// Run fans events out as they commit and delivers routes as they come due,
// each stage woken by the store and on a poll as the fallback, and makes
// the calls settles hand over as they arrive. Every call runs on its own
// goroutine, so a slow consumer holds up only its own calls. On exit it
// waits for the calls in flight to settle.
func (r *Router) Run(ctx context.Context) error {
	var calls sync.WaitGroup
	defer calls.Wait()
	var stages sync.WaitGroup
	stages.Go(func() {
		r.loop(ctx, intake.TopicEvents, r.freed[0], func() (int, int, error) {
			limit := min(r.free(), r.cfg.Batch)
			n, _, err := r.fanOutRound(ctx, &calls, limit)
			return n, limit, err
		})
	})
	stages.Go(func() {
		r.loop(ctx, intake.TopicRoutes, r.freed[1], func() (int, int, error) {
			limit := min(r.free(), r.cfg.Batch)
			n, err := r.deliverRound(ctx, &calls, limit)
			return n, limit, err
		})
	})
	// The calls settles hand over go out as they come, not behind a claim.
	stages.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.cfg.Calls.Ready():
				r.startSettled(ctx, &calls)
			}
		}
	})
	stages.Wait()
	return nil
}

// loop runs round until ctx ends: again at once after a round that took
// all it asked for, else when topic commits, a call frees a slot, or the
// poll fires. A round with no free slot claims nothing and waits for one,
// or for ingest's pressure to fall.
func (r *Router) loop(ctx context.Context, topic string, freed <-chan struct{}, round func() (n, asked int, err error)) {
	wake, stop := r.cfg.Store.Listen(topic)
	defer stop()
	poll := time.NewTimer(r.cfg.Poll)
	defer poll.Stop()
	for ctx.Err() == nil {
		n, asked, err := round()
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("router: claim failed", "topic", topic, "err", err)
		}
		if n > 0 && n == asked {
			continue
		}
		var full, calm <-chan struct{} // only a stage held back by its slots waits for one
		if r.free() <= 0 {
			if full = freed; r.cfg.Pressure.High() {
				calm = r.cfg.Pressure.Calm()
			}
		}
		poll.Reset(r.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-full:
		case <-calm:
		case <-poll.C:
		}
	}
}

// limit is how many slots may be used now: all of them, fewer while
// ingest is under pressure.
func (r *Router) limit() int { return r.cfg.Pressure.Limit(r.cfg.MaxEvents) }

// free is how many more calls this process may start.
func (r *Router) free() int { return r.slots.free(r.limit()) }

// run makes one call on a slot already held for it, and frees it after.
// The call's context outlives ctx: a call begun is settled.
func (r *Router) run(ctx context.Context, calls interface{ Go(func()) }, c intake.RouteClaim, b *batch) {
	calls.Go(func() {
		defer r.release(c.Event.OrgID, c.ConsumerID, 1)
		r.call(context.WithoutCancel(ctx), c, b)
	})
}

// hold takes a slot for a call to c of org that its fan-out is about to
// lease, if c's shares have one; a route without one is written unleased
// and waits for a claim.
func (r *Router) hold(org string, c *intake.Consumer) bool {
	return r.slots.tryHold(org, c.ID, c.Controls, r.limit())
}

// release frees n call slots of a consumer and wakes both stages' loops.
func (r *Router) release(org, consumer string, n int) {
	if n <= 0 {
		return
	}
	r.slots.release(org, consumer, n)
	for _, ch := range r.freed {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// fanOutRound claims up to limit new events and fans each out, starting
// the calls the store leased in the same commit. It returns how many
// events it claimed and how many calls it started.
func (r *Router) fanOutRound(ctx context.Context, calls *sync.WaitGroup, limit int) (events, started int, err error) {
	if limit <= 0 || !r.replicaTakes(ctx) {
		return 0, 0, nil
	}
	claims, err := r.cfg.Store.ClaimEvents(ctx, r.cfg.Clock.Now(), r.cfg.Lease, limit)
	if err != nil {
		return 0, 0, err // not committed: no lease is held on any of them
	}
	es := make([]*intake.Event, len(claims))
	for i := range claims {
		es[i] = &claims[i].Event
	}
	b := r.read(ctx, es, readsRequest)
	// Each event's fan-out is its own transaction: they run side by side,
	// and each starts its handed-over calls as soon as it commits.
	var fanOuts sync.WaitGroup
	var n atomic.Int64
	for _, ec := range claims {
		fanOuts.Go(func() {
			fctx, handed := r.fanOut(ctx, ec, b)
			n.Add(int64(len(handed)))
			for _, rc := range handed {
				r.run(fctx, calls, rc, b)
			}
		})
	}
	fanOuts.Wait()
	return len(claims), int(n.Load()), nil
}

// deliverRound claims up to limit due routes and starts their calls. It
// returns how many it claimed.
func (r *Router) deliverRound(ctx context.Context, calls *sync.WaitGroup, limit int) (int, error) {
	if limit <= 0 || !r.replicaTakes(ctx) {
		return 0, nil
	}
	claims, err := r.cfg.Store.ClaimRoutes(ctx, r.cfg.Clock.Now(), r.cfg.Lease, r.slots.shares(limit, r.limit()))
	if err != nil {
		return 0, err
	}
	for _, c := range claims {
		r.slots.hold(c.Event.OrgID, c.ConsumerID, 1)
	}
	b := r.readFor(ctx, claims)
	for _, c := range claims {
		// The call joins the trace of the processing that created the event.
		r.run(tracing.FromTraceParent(ctx, c.Event.TraceParent), calls, c, b)
	}
	return len(claims), nil
}

// replicaTakes reports whether a round may claim: with Config.Replica,
// once the commits so far are in the replica. While it cannot be reached
// nothing is claimed, as a lease whose call could not go out would run
// out and spend an attempt.
func (r *Router) replicaTakes(ctx context.Context) bool {
	if r.cfg.Replica == nil {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, replicaWait)
	defer cancel()
	return r.cfg.Replica.Sync(rctx) == nil
}

// Wait makes the calls settles handed over and not yet made, and returns
// once they have settled; a process calls it after its loops stopped,
// since a settle finishing on the way out may still hand some over.
func (r *Router) Wait() {
	r.startSettled(context.Background(), &r.handed)
	r.handed.Wait()
}

// RunOnce steps both stages once and waits for every call it started: the
// calls settles handed over, one batch of events fanned out (with the
// calls their fan-outs leased), then one claim of due routes, each as many
// as its free slots allow (fewer while ingest is under pressure). It
// returns how many events and calls it handled; for tests and tools that
// step the router.
func (r *Router) RunOnce(ctx context.Context) (int, error) {
	r.Wait()
	var calls sync.WaitGroup
	events, started, err := r.fanOutRound(ctx, &calls, min(r.free(), r.cfg.Batch))
	calls.Wait()
	if err != nil {
		return 0, err
	}
	routes, err := r.deliverRound(ctx, &calls, min(r.free(), r.cfg.Batch))
	calls.Wait()
	return events + started + routes, err
}

// orgConsumers is one org's consumers as read for a batch, or why they
// could not be read.
type orgConsumers struct {
	list []intake.Consumer
	err  error
}

// batch is what a claimed batch reads once, rather than once per event:
// each org's consumers, and the original requests of the events whose
// consumers have rules that may read them.
type batch struct {
	consumers   map[string]orgConsumers
	requests    map[string]intake.OriginalRequest
	credentials map[string][]string // by connection, for the requests' view
	requestsErr error
}

// consumer finds a consumer of the batch's read; ok is false when it is
// not there (deleted), err when its org's consumers could not be read.
func (b *batch) consumer(orgID, id string) (c intake.Consumer, ok bool, err error) {
	oc := b.consumers[orgID]
	if oc.err != nil {
		return c, false, oc.err
	}
	for _, c := range oc.list {
		if c.ID == id {
			return c, true, nil
		}
	}
	return c, false, nil
}

// orgConsumers reads an org's consumers, through the cache.
func (r *Router) orgConsumers(ctx context.Context, orgID string) orgConsumers {
	list, err := r.consumers.Get(orgID, r.cfg.Clock.Now(), func() ([]intake.Consumer, error) {
		return r.cfg.Store.ListConsumers(ctx, intake.Scope{OrgID: orgID})
	})
	return orgConsumers{list, err}
}

// read reads the consumers of the events' orgs, and the original requests
// of the events whose org has a consumer that reads them.
func (r *Router) read(ctx context.Context, events []*intake.Event, reads func(*intake.Consumer) bool) *batch {
	b := &batch{consumers: map[string]orgConsumers{}}
	var ids, conns []string
	for _, e := range events {
		oc, ok := b.consumers[e.OrgID]
		if !ok {
			oc = r.orgConsumers(ctx, e.OrgID)
			b.consumers[e.OrgID] = oc
		}
		for i := range oc.list {
			if reads(&oc.list[i]) {
				ids = append(ids, e.MessageID)
				conns = append(conns, e.ConnectionID)
				break
			}
		}
	}
	if len(ids) > 0 {
		b.requests, b.requestsErr = r.cfg.Store.MessageRequests(ctx, ids)
		r.readCredentials(ctx, b, conns)
	}
	return b
}

// readFor reads what the calls of claimed routes need: their consumers,
// and the original requests of the events whose consumer transforms them.
func (r *Router) readFor(ctx context.Context, claims []intake.RouteClaim) *batch {
	b := &batch{consumers: map[string]orgConsumers{}}
	var ids, conns []string
	for _, c := range claims {
		e := &c.Event
		if _, ok := b.consumers[e.OrgID]; !ok {
			b.consumers[e.OrgID] = r.orgConsumers(ctx, e.OrgID)
		}
		if cons, ok, _ := b.consumer(e.OrgID, c.ConsumerID); ok && cons.Transform != "" {
			ids = append(ids, e.MessageID)
			conns = append(conns, e.ConnectionID)
		}
	}
	if len(ids) > 0 {
		b.requests, b.requestsErr = r.cfg.Store.MessageRequests(ctx, ids)
		r.readCredentials(ctx, b, conns)
	}
	return b
}

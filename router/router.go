// Package router routes events to consumers in two stages. The fan-out
// selects each new event's consumers, runs their filters and ordering
// keys (fanout.Judger), and writes one route per consumer; the routes to
// consumers that nothing holds back come back leased and are called at
// once. The worker has the Judger judge it before the settle that creates
// the events, which writes it with them and hands the calls it leased to
// the router (handoff.Calls); an event no settle fanned out is fanned out
// on a claim of its own. The
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
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/internal/bodyurl"
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
	// truncated, for the Judger the router builds when FanOut is nil.
	BodyURLs bodyurl.Signer
	Clock    intake.Clock
	// Backoff is the server's retry schedule; a consumer's own retry
	// controls adjust it.
	Backoff intake.Backoff
	Lease   time.Duration // must exceed the delivery timeout (default 1m)
	Poll    time.Duration // fallback poll (default 1s)
	Batch   int           // events or routes claimed per round (default 64)
	// FanOut judges fan-outs and holds the call slots, the same Judger
	// the worker has judge each settle's fan-out. When nil, the router
	// builds its own from BodyURLs, Clock, Lease, MaxEvents,
	// ConsumerShare, Pressure, Rules, Metrics and Logger.
	FanOut *fanout.Judger
	// MaxEvents bounds the calls this process has in flight (default
	// 256), for the Judger the router builds when FanOut is nil.
	MaxEvents int
	// ConsumerShare bounds the calls one consumer may have in flight in
	// this process unless it sets its own max_in_flight, for the Judger
	// the router builds when FanOut is nil (default DefaultConsumerShare).
	ConsumerShare int
	// Calls brings the first calls of the settles whose fan-outs FanOut
	// judged, to be made on the slots it held for them.
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
	// Rules runs consumers' transforms (and, in the Judger the router
	// builds when FanOut is nil, their filters and ordering keys); nil: an
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
	cfg Config
	// fo judges fan-outs, reads consumers and holds the call slots.
	fo *fanout.Judger
	// freed wakes each stage's loop (coalesced) when a call slot comes
	// free.
	freed [2]chan struct{}
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

// DefaultConsumerShare is the most calls one consumer may have in flight in
// a process unless it sets its own max_in_flight.
const DefaultConsumerShare = fanout.DefaultConsumerShare

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
	if cfg.FanOut == nil {
		cfg.FanOut = fanout.New(fanout.Config{Store: cfg.Store, BodyURLs: cfg.BodyURLs, Clock: cfg.Clock, Lease: cfg.Lease,
			MaxEvents: cfg.MaxEvents, ConsumerShare: cfg.ConsumerShare, Pressure: cfg.Pressure, Rules: cfg.Rules,
			Metrics: cfg.Metrics, Logger: cfg.Logger})
	}
	r := &Router{cfg: cfg, fo: cfg.FanOut, freed: [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}}
	for _, ch := range r.freed {
		r.fo.Wake(ch)
	}
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

// free is how many more calls this process may start.
func (r *Router) free() int { return r.fo.Free() }

// run makes one call on a slot already held for it, and frees it after.
// The call's context outlives ctx: a call begun is settled.
func (r *Router) run(ctx context.Context, calls interface{ Go(func()) }, c intake.RouteClaim, b *fanout.Batch) {
	calls.Go(func() {
		defer r.fo.Release(c.Event.OrgID, c.ConsumerID, 1)
		r.call(context.WithoutCancel(ctx), c, b)
	})
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
	b := r.fo.Read(ctx, es, fanout.ReadsRequest)
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
	claims, err := r.cfg.Store.ClaimRoutes(ctx, r.cfg.Clock.Now(), r.cfg.Lease, r.fo.Shares(limit))
	if err != nil {
		return 0, err
	}
	for _, c := range claims {
		r.fo.Hold(c.Event.OrgID, c.ConsumerID, 1)
	}
	b := r.fo.ReadFor(ctx, claims)
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

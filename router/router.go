// Package router routes events to consumers: it claims due events as
// numbered attempts, selects the consumers whose patterns match, delivers
// to each that has not yet handled the event, and settles the attempt
// (deliveries and state) in one transaction.
package router

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/seal"
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
	Backoff  intake.Backoff
	Lease    time.Duration // must exceed the delivery timeout (default 1m)
	Poll     time.Duration // fallback poll (default 1s)
	Batch    int           // events claimed per round (default 64)
	// MaxEvents bounds the events being routed at once (default 256);
	// PerConsumer bounds the calls in flight to one consumer (default 64).
	// A call waits up to SlotWait for a free slot; an event whose only
	// pending consumers stayed busy is deferred by DeferDelay without using
	// up an attempt.
	MaxEvents   int
	PerConsumer int
	SlotWait    time.Duration // default 1s
	DeferDelay  time.Duration // default 1s
	// Rules runs consumers' filters and transforms; nil: an engine with
	// the default bounds.
	Rules   *rules.Engine
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Router claims and routes events until its context ends.
type Router struct {
	cfg   Config
	slots chan struct{} // one per event in flight

	mu    sync.Mutex
	calls map[string]chan struct{} // consumer id → its in-flight calls
}

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
	if cfg.PerConsumer == 0 {
		cfg.PerConsumer = 64
	}
	if cfg.SlotWait == 0 {
		cfg.SlotWait = time.Second
	}
	if cfg.DeferDelay == 0 {
		cfg.DeferDelay = time.Second
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
	return &Router{cfg: cfg, slots: make(chan struct{}, cfg.MaxEvents), calls: map[string]chan struct{}{}}
}

// Run routes events as they commit (woken by the store) and on a poll as
// the fallback. Each event is routed on its own goroutine, so a slow
// consumer holds up only the events waiting on it; the loop keeps claiming
// while they run. On exit it waits for the events in flight to settle.
func (r *Router) Run(ctx context.Context) error {
	wake, stop := r.cfg.Store.Listen(intake.TopicEvents)
	defer stop()
	poll := time.NewTimer(r.cfg.Poll)
	defer poll.Stop()
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		free := cap(r.slots) - len(r.slots)
		n := 0
		if free > 0 {
			claims, err := r.cfg.Store.ClaimEvents(ctx, r.cfg.Clock.Now(), r.cfg.Lease, min(free, r.cfg.Batch))
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.Error("router: claim failed", "err", err)
				}
				claims = nil // not committed: no lease is held on any of them
			}
			n = len(claims)
			b := r.read(ctx, claims)
			for _, c := range claims {
				r.slots <- struct{}{}
				inflight.Add(1)
				go func() {
					defer func() { <-r.slots; inflight.Done() }()
					r.route(context.WithoutCancel(ctx), c, b)
				}()
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if n == r.cfg.Batch {
			continue
		}
		poll.Reset(r.cfg.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-poll.C:
		}
	}
}

// RunOnce claims one batch and routes it to completion, returning how many
// events it claimed; for tests and tools that step the router.
func (r *Router) RunOnce(ctx context.Context) (int, error) {
	claims, err := r.cfg.Store.ClaimEvents(ctx, r.cfg.Clock.Now(), r.cfg.Lease, r.cfg.Batch)
	if err != nil {
		return 0, err
	}
	b := r.read(ctx, claims)
	var wg sync.WaitGroup
	for _, c := range claims {
		wg.Go(func() { r.route(ctx, c, b) })
	}
	wg.Wait()
	return len(claims), nil
}

// orgConsumers is one org's consumers as read for a batch, or why they
// could not be read.
type orgConsumers struct {
	list []intake.Consumer
	err  error
}

// batch is what a claimed batch's routing reads once, rather than once per
// event: each org's consumers, and the original requests of the events
// whose consumers have rules that may read them.
type batch struct {
	consumers   map[string]orgConsumers
	requests    map[string]intake.OriginalRequest
	requestsErr error
}

func (r *Router) read(ctx context.Context, claims []intake.EventClaim) *batch {
	b := &batch{consumers: map[string]orgConsumers{}}
	var ids []string
	for _, c := range claims {
		org := c.Event.OrgID
		oc, ok := b.consumers[org]
		if !ok {
			list, err := r.cfg.Store.ListConsumers(ctx, intake.Scope{OrgID: org})
			oc = orgConsumers{list, err}
			b.consumers[org] = oc
		}
		for _, cons := range oc.list {
			if cons.Filter != "" || cons.Transform != "" {
				ids = append(ids, c.Event.MessageID)
				break
			}
		}
	}
	if len(ids) > 0 {
		b.requests, b.requestsErr = r.cfg.Store.MessageRequests(ctx, ids)
	}
	return b
}

// route runs one claimed routing attempt to its settlement.
func (r *Router) route(ctx context.Context, c intake.EventClaim, b *batch) {
	oc := b.consumers[c.Event.OrgID]
	ctx, span := startRoute(ctx, c)
	defer span.End()
	e := &c.Event
	st := intake.EventSettlement{EventID: e.ID, Attempt: c.Attempt}
	if c.Attempt > e.MaxAttempts {
		// The last attempt's lease ran out unsettled.
		st.To = intake.EventDead
		r.settle(ctx, c, st)
		return
	}
	if oc.err != nil {
		r.cfg.Logger.Error("router: consumers unavailable; the lease will expire and the event retry", "event_id", e.ID, "err", oc.err)
		traceUnrouted(ctx)
		return
	}
	selected := intake.SelectConsumers(e, oc.list)
	var todo []intake.Consumer
	for _, cons := range selected {
		if !c.Done[cons.ID] {
			todo = append(todo, cons)
		}
	}
	results := r.deliverAll(ctx, e, c.Attempt, todo, b)
	pending, deferred, filtered, gone := 0, 0, 0, 0
	wait := time.Duration(0)
	for _, res := range results {
		if res.deferred {
			pending++
			deferred++
			continue // no call was made: nothing to record
		}
		if res.StatusCode == http.StatusGone {
			// The consumer asked to be disabled: it no longer wants this
			// event or any other, so it is neither pending nor selected.
			res.Delivery.Error = "the consumer answered 410 Gone: it is disabled"
			st.Deliveries = append(st.Deliveries, res.Delivery)
			st.Gone = append(st.Gone, res.ConsumerID)
			gone++
			continue
		}
		st.Deliveries = append(st.Deliveries, res.Delivery)
		if res.Outcome == intake.DeliveryFiltered {
			filtered++
		}
		if !res.Succeeded() {
			pending++
			wait = max(wait, res.retryAfter)
		}
	}
	if pending > 0 && pending == deferred {
		// Only busy consumers are left: try again soon, at no cost to the
		// attempt budget.
		st.To, st.Deferred = intake.EventRetrying, true
		st.NextAttemptAt = r.cfg.Clock.Now().Add(r.cfg.DeferDelay)
		r.settle(ctx, c, st)
		return
	}
	st.To = intake.RoutingOutcome(len(selected)-gone, filtered, pending, c.Attempt, e.MaxAttempts)
	if st.To == intake.EventRetrying {
		st.NextAttemptAt = r.cfg.Clock.Now().Add(max(wait, r.cfg.Backoff.Delay(c.Attempt)))
	}
	r.settle(ctx, c, st)
}

func (r *Router) settle(ctx context.Context, c intake.EventClaim, st intake.EventSettlement) {
	err := r.cfg.Store.SettleEvent(ctx, r.cfg.Clock.Now(), st)
	traceRouted(ctx, st, err)
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		r.cfg.Logger.Info("router: attempt lost its lease; result dropped", "event_id", c.Event.ID, "attempt", c.Attempt)
		return
	case err != nil:
		r.cfg.Logger.Error("router: settle failed; the lease will expire and the event retry", "event_id", c.Event.ID, "err", err)
		return
	}
	r.cfg.Metrics.EventStates.WithLabelValues(string(st.To)).Inc()
	switch st.To {
	case intake.EventDead:
		r.cfg.Logger.Warn("router: event dead", "event_id", c.Event.ID, "type", c.Event.Type, "attempt", c.Attempt)
	case intake.EventNoConsumer:
		r.cfg.Logger.Info("router: no consumer", "event_id", c.Event.ID, "type", c.Event.Type)
	}
}

package router

import (
	"context"
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/rules"
)

// replicaWait is how long a call waits for the replica to take the
// commits before it (Config.Replica).
const replicaWait = 10 * time.Second

// call makes one leased call of a route and settles it on the route.
func (r *Router) call(ctx context.Context, c intake.RouteClaim, b *fanout.Batch) {
	e := &c.Event
	cons, found, err := b.Consumer(e.OrgID, c.ConsumerID)
	if err != nil {
		r.cfg.Logger.Error("router: consumers unavailable; the lease will expire and the call be claimed again",
			"event_id", e.ID, "consumer_id", c.ConsumerID, "err", err)
		return
	}
	s := intake.RouteSettlement{EventID: e.ID, ConsumerID: c.ConsumerID, Attempt: c.Attempt, Probe: c.Probe}
	if !found || !cons.Enabled {
		// Deleted or disabled since the fan-out: the route is dropped,
		// and a broker connection kept for the consumer closed.
		r.cfg.Sender.Forget(c.ConsumerID)
		r.count(c.ConsumerID, string(intake.RouteDropped))
		_, _ = r.settle(ctx, s)
		return
	}
	if r.cfg.Replica != nil {
		rctx, cancel := context.WithTimeout(ctx, replicaWait)
		err := r.cfg.Replica.Sync(rctx)
		cancel()
		if err != nil {
			// The call is handed back unmade: it spends no attempt, and
			// is claimed again once the replica takes the commits (no
			// round claims before).
			r.cfg.Logger.Warn("router: the replica does not hold the event; the call is handed back",
				"event_id", e.ID, "consumer_id", c.ConsumerID, "err", err)
			if err := r.cfg.Store.ReleaseRoute(ctx, r.cfg.Clock.Now(), e.ID, c.ConsumerID, c.Attempt); err != nil {
				r.cfg.Logger.Error("router: handing back the call failed; its lease will run out",
					"event_id", e.ID, "consumer_id", c.ConsumerID, "err", err)
			}
			return
		}
	}
	ctx, span := startDelivery(ctx, e, cons, c.Attempt)
	res, called := r.deliver(ctx, cons, rules.NewEventView(r.fo.Envelope(e), b.Origin(e)), c.Attempt, c.OrderKey)
	if res.Outcome == intake.DeliveryHandled && !e.Replay {
		r.cfg.Metrics.EndToEnd.Observe(r.cfg.Clock.Now().Sub(e.ReceivedAt).Seconds())
	}
	d := r.fo.Record(e, cons.ID, c.Attempt, res)
	s.Delivery, s.Called, s.RetryAfter = &d, called, res.RetryAfter
	if res.StatusCode == http.StatusGone {
		// The consumer asked to be disabled: it no longer wants this event
		// or any other.
		d.Error, s.Gone = "the consumer answered 410 Gone: it is disabled", true
	}
	recorded, err := r.settle(ctx, s)
	if recorded != "" {
		// The settle decides whether a failed call spent the last attempt.
		res.Outcome = recorded
	}
	r.count(cons.ID, res.Outcome)
	if called {
		r.cfg.Metrics.DeliverySeconds.WithLabelValues(res.Outcome).Observe(res.Latency.Seconds())
		r.cfg.Metrics.ConsumerLatency(cons.ID, res.Latency)
	}
	endDelivery(span, res, err)
}

// count adds one call (or decision to make none) to the delivery metrics.
func (r *Router) count(consumerID string, outcome string) {
	r.cfg.Metrics.Deliveries.WithLabelValues(outcome).Inc()
	r.cfg.Metrics.ConsumerOutcome(consumerID, outcome)
}

// settle applies one call's result to its route, returning the call's
// outcome as recorded; a result whose lease was lost is dropped, as the
// route is another call's now.
func (r *Router) settle(ctx context.Context, s intake.RouteSettlement) (recorded string, err error) {
	recorded, err = r.cfg.Store.SettleRoute(ctx, r.cfg.Clock.Now(), s, r.cfg.Backoff)
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		r.cfg.Logger.Info("router: call lost its lease; result dropped", "event_id", s.EventID, "consumer_id", s.ConsumerID, "attempt", s.Attempt)
	case err != nil:
		r.cfg.Logger.Error("router: settle failed; the lease will expire and the call be made again",
			"event_id", s.EventID, "consumer_id", s.ConsumerID, "err", err)
	}
	return recorded, err
}

// deliver transforms, signs and sends one call. called is false when no
// request was made (the transform failed or skipped the event): such a
// result does not count for the consumer's breaker.
func (r *Router) deliver(ctx context.Context, c intake.Consumer, in *rules.EventView, attempt int, orderKey string) (res delivery.Result, called bool) {
	var out *rules.Output
	if c.Transform != "" {
		body, err := in.JSON()
		if err == nil {
			// Run without the request, a transform could send a body it
			// would not: it waits, as a filter does, until it can be read.
			headers, query, rerr := in.Request()
			if rerr != nil {
				return delivery.Result{Outcome: intake.DeliveryRetry, Err: "original request cannot be read"}, false
			}
			out, err = r.cfg.Rules.Transform(ctx, rules.Script{Scope: c.OrgID, Source: c.Transform}, body,
				rules.TransformContext{ConsumerID: c.ID, Consumer: c.Name, App: c.App, Attempt: attempt, Headers: headers, Query: query})
		}
		switch {
		case err != nil:
			// A failed attempt, retried on the consumer's schedule: fixing
			// the script heals what is still waiting.
			return delivery.Result{Outcome: intake.DeliveryRetry, Err: err.Error()}, false
		case out.Skip:
			return delivery.Result{Outcome: intake.DeliveryFiltered, Err: "transform returned null"}, false
		}
	}
	secrets, err := r.cfg.Sealer.ConsumerSecrets(c, r.cfg.Clock.Now())
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "consumer secret cannot be opened"}, false
	}
	dest, err := r.cfg.Sealer.ConsumerURL(c)
	if err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "consumer url cannot be opened"}, false
	}
	env := in.Envelope()
	p := delivery.Publication{ID: env.ID, Type: env.Type, OrderKey: orderKey}
	if out != nil {
		header := out.Header
		if !out.JSON && header.Get("Content-Type") == "" {
			header = header.Clone()
			if header == nil {
				header = http.Header{}
			}
			header.Set("Content-Type", "text/plain; charset=utf-8")
		}
		p.Body, p.Header = out.Body, header
		return r.cfg.Sender.Deliver(ctx, c.ID, dest, secrets, p, r.cfg.Clock.Now()), true
	}
	if p.Body, err = in.JSON(); err != nil {
		return delivery.Result{Outcome: intake.DeliveryRetry, Err: "encode envelope: " + err.Error()}, false
	}
	return r.cfg.Sender.Deliver(ctx, c.ID, dest, secrets, p, r.cfg.Clock.Now()), true
}

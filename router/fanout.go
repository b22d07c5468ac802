package router

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/rules"
)

// readsRequest reports whether a consumer's rules may read an event's
// original request: its filter, its transform, or a CEL ordering key.
func readsRequest(c *intake.Consumer) bool {
	return c.Filter != "" || c.Transform != "" || (c.Controls.Ordering != "" && c.Controls.Ordering != intake.OrderingSubject)
}

// fanOut selects a claimed event's consumers, judges each one's filter,
// computes its ordering key and writes the routes. It returns the calls
// the store leased to this process in the same commit. An event it cannot
// judge (its consumers or its request could not be read) is left as it
// is: its lease runs out and it is claimed again. The context returned
// carries the fan-out's span, the parent of those calls.
func (r *Router) fanOut(ctx context.Context, ec intake.EventClaim, b *batch) (context.Context, []intake.RouteClaim) {
	ctx, span := startRoute(ctx, ec)
	defer span.End()
	e := &ec.Event
	oc := b.consumers[e.OrgID]
	if oc.err != nil {
		r.cfg.Logger.Error("router: consumers unavailable; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", oc.err)
		traceUnrouted(ctx, "consumers unavailable")
		return ctx, nil
	}
	in := rules.NewEventView(r.envelope(e), b.origin(e))
	f := intake.FanOut{EventID: e.ID, Attempt: ec.Attempt, Lease: r.cfg.Lease}
	held := &taken{org: e.OrgID}
	filtered := 0
	for _, c := range intake.SelectConsumers(e, oc.list) {
		if ec.Done[c.ID] {
			continue
		}
		route, err := r.judge(ctx, e, c, in)
		if err != nil {
			r.cfg.Logger.Error("router: the event's request cannot be read for its rules; the lease will expire and the event be fanned out again",
				"event_id", e.ID, "consumer_id", c.ID, "err", err)
			traceUnrouted(ctx, "request unavailable")
			r.giveBack(held, nil)
			return ctx, nil
		}
		if route.Filtered {
			filtered++
		}
		r.take(held, &c, &route)
		f.Routes = append(f.Routes, route)
	}
	claims, err := r.cfg.Store.FanOut(ctx, r.cfg.Clock.Now(), f)
	r.giveBack(held, claims)
	state := "routed"
	switch {
	case len(f.Routes) == 0 && len(ec.Done) == 0:
		state = string(intake.EventNoConsumer)
	case filtered == len(f.Routes) && len(ec.Done) == 0:
		state = string(intake.EventFiltered)
	}
	traceFannedOut(ctx, state, len(f.Routes), err)
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		r.cfg.Logger.Info("router: fan-out lost its lease; result dropped", "event_id", e.ID, "attempt", ec.Attempt)
		return ctx, nil
	case err != nil:
		r.cfg.Logger.Error("router: fan-out failed; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", err)
		return ctx, nil
	}
	r.fannedOut(e, state, f.Routes)
	return ctx, claims
}

// fannedOut accounts for a committed fan-out, on a claim or in a settle:
// the state it left the event in ("routed" while routes wait), and the
// records it wrote for routes it made no call for (filtered, or held for a
// paused consumer).
func (r *Router) fannedOut(e *intake.Event, state string, routes []intake.FanOutRoute) {
	for _, rt := range routes {
		if rt.Delivery != nil {
			r.count(rt.ConsumerID, rt.Delivery.Outcome)
		}
	}
	if state == string(intake.EventNoConsumer) {
		r.cfg.Logger.Info("router: no consumer", "event_id", e.ID, "type", e.Type)
	}
	r.cfg.Metrics.FanOuts.WithLabelValues(state).Inc()
}

// judge runs one selected consumer's filter and computes its ordering
// key. An error means the request its rules read could not be read: no
// verdict.
func (r *Router) judge(ctx context.Context, e *intake.Event, c intake.Consumer, in *rules.EventView) (intake.FanOutRoute, error) {
	route := intake.FanOutRoute{ConsumerID: c.ID}
	if c.Filter != "" {
		fin, err := in.Input()
		if err != nil {
			return route, err
		}
		ok, err := r.cfg.Rules.Filter(ctx, c.Filter, fin)
		switch {
		case ctx.Err() != nil:
			return route, ctx.Err()
		case err != nil || !ok:
			d := r.record(e, c.ID, 1, delivery.Result{Outcome: intake.DeliveryFiltered})
			if err != nil {
				d.Error = "filter_error: " + err.Error()
			}
			route.Filtered, route.Delivery = true, &d
			return route, nil
		}
	}
	if c.Controls.Paused {
		d := r.record(e, c.ID, 0, delivery.Result{Outcome: intake.DeliveryHeld,
			Err: "held: the consumer is paused; the event waits for its resume"})
		route.Delivery = &d
	}
	switch o := c.Controls.Ordering; o {
	case "":
	case intake.OrderingSubject:
		if len(e.ObjectIDs) > 0 {
			route.OrderKey = e.ConnectionID + "/" + e.ObjectIDs[0]
		}
	default:
		fin, err := in.Input()
		if err != nil {
			return route, err
		}
		// A key that does not evaluate for this event (a field it lacks)
		// leaves the event unordered, as "subject" leaves an event about
		// no object: holding it back would hold it forever.
		if route.OrderKey, err = r.cfg.Rules.Key(ctx, o, fin); err != nil {
			if ctx.Err() != nil {
				return route, ctx.Err()
			}
			r.cfg.Logger.Warn("router: the ordering key failed; the event is delivered unordered", "event_id", e.ID, "consumer_id", c.ID, "err", err)
		}
	}
	return route, nil
}

// envelope is the event as consumers receive it, with a fresh body URL
// when its data was truncated.
func (r *Router) envelope(e *intake.Event) intake.Envelope {
	env := intake.NewEnvelope(e)
	if e.DataTruncated && len(r.cfg.BodyURLs.Key) > 0 {
		env.BodyURL = r.cfg.BodyURLs.URL(e.MessageID, r.cfg.Clock.Now().Add(bodyurl.TTL))
	}
	return env
}

// record is the delivery record of one call (or of a decision to make
// none).
func (r *Router) record(e *intake.Event, consumerID string, attempt int, res delivery.Result) intake.Delivery {
	return intake.Delivery{ID: intake.NewID(), OrgID: e.OrgID, EventID: e.ID, ConsumerID: consumerID, Attempt: attempt,
		Outcome: res.Outcome, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Err, At: r.cfg.Clock.Now()}
}

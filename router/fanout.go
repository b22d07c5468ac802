package router

import (
	"context"
	"fmt"

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

// fanOut fans out a claimed event: it judges the event (judgeEvent) and
// writes its routes. It returns the calls the store leased to this
// process in the same commit. An event it cannot judge (its consumers or
// its request could not be read) is left as it is: its lease runs out and
// it is claimed again. The context returned carries the fan-out's span,
// the parent of those calls.
func (r *Router) fanOut(ctx context.Context, ec intake.EventClaim, b *batch) (context.Context, []intake.RouteClaim) {
	ctx, span := startRoute(ctx, ec)
	defer span.End()
	e := &ec.Event
	held := &taken{org: e.OrgID}
	f, err := r.judgeEvent(ctx, e, rules.NewEventView(r.envelope(e), b.origin(e)), b, ec.Done, held)
	if err != nil {
		r.cfg.Logger.Error("router: the event cannot be judged; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", err)
		traceUnrouted(ctx, err.Error())
		return ctx, nil
	}
	f.Attempt = ec.Attempt
	out, err := r.cfg.Store.FanOut(ctx, r.cfg.Clock.Now(), f)
	r.giveBack(held, out.Calls)
	traceFannedOut(ctx, fanOutState(out.State), len(f.Routes), err)
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		r.cfg.Logger.Info("router: fan-out lost its lease; result dropped", "event_id", e.ID, "attempt", ec.Attempt)
		return ctx, nil
	case err != nil:
		r.cfg.Logger.Error("router: fan-out failed; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", err)
		return ctx, nil
	}
	r.fannedOut(e, out.State, f.Routes)
	return ctx, out.Calls
}

// Judge fans out the events a message's settle is about to create, before
// it, so that the settle writes their routes with them (see
// intake.Settlement.FanOuts) and no filter or ordering key runs while the
// store writes: the worker calls it with the message's events and the
// rules' views it built of them. It holds a call slot for each route to a
// consumer that nothing paces, as the org's shares allow, for the first
// calls the settle may lease; the settle's hand-off (handoff.Calls) brings
// them back to this router, which makes them and frees the slots not used.
// An event it cannot judge, or a replay (whose original the settle finds),
// has no fan-out: a router's claim takes it.
func (r *Router) Judge(ctx context.Context, m *intake.Message, events []intake.Event, views map[string]*rules.EventView) map[string]intake.FanOut {
	oc := r.orgConsumers(ctx, m.OrgID)
	if oc.err != nil {
		return nil
	}
	b := &batch{consumers: map[string]orgConsumers{m.OrgID: oc},
		requests: map[string]intake.OriginalRequest{m.ID: {Query: m.Query, Header: m.Header}}}
	r.readCredentials(ctx, b, []string{m.ConnectionID})
	out := map[string]intake.FanOut{}
	held := &taken{org: m.OrgID}
	for i := range events {
		e := &events[i]
		if e.Replay {
			continue
		}
		view := views[e.ID]
		if view == nil || (e.DataTruncated && len(r.cfg.BodyURLs.Key) > 0) {
			// Consumers of a truncated event receive a body URL, which the
			// worker's view does not carry.
			view = rules.NewEventView(r.envelope(e), b.origin(e))
		}
		if f, err := r.judgeEvent(ctx, e, view, b, nil, held); err == nil {
			out[e.ID] = f
		}
	}
	return out
}

// judgeEvent is the one fan-out: it selects e's consumers (but those in
// done, which a re-routed event finished), judges each one's filter,
// computes its ordering key, and holds a call slot in held for each route
// it may lease. An error (the consumers, or the request their rules read,
// could not be read) gives back what it held: no verdict.
func (r *Router) judgeEvent(ctx context.Context, e *intake.Event, in *rules.EventView, b *batch, done map[string]bool, held *taken) (intake.FanOut, error) {
	oc := b.consumers[e.OrgID]
	if oc.err != nil {
		return intake.FanOut{}, fmt.Errorf("consumers unavailable: %w", oc.err)
	}
	f := intake.FanOut{EventID: e.ID, Lease: r.cfg.Lease}
	mine := &taken{org: e.OrgID}
	for _, c := range intake.SelectConsumers(e, oc.list) {
		if done[c.ID] {
			continue
		}
		route, err := r.judge(ctx, e, c, in)
		if err != nil {
			r.giveBack(mine, nil)
			return intake.FanOut{}, fmt.Errorf("request unavailable for consumer %s: %w", c.ID, err)
		}
		r.take(mine, &c, &route)
		f.Routes = append(f.Routes, route)
	}
	held.add(mine)
	return f, nil
}

// fanOutState names the state a fan-out left its event in, for traces
// and metrics: "routed" while its routes wait.
func fanOutState(s intake.EventState) string {
	if s == intake.EventPending || s == intake.EventRetrying || s == "" {
		return "routed"
	}
	return string(s)
}

// fannedOut accounts for a committed fan-out, on a claim or in a settle:
// the state it left the event in, and the records it wrote for routes it
// made no call for (filtered, or held for a paused consumer).
func (r *Router) fannedOut(e *intake.Event, to intake.EventState, routes []intake.FanOutRoute) {
	state := fanOutState(to)
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
				d.Error = intake.FilterErrorPrefix + err.Error()
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
		Outcome: res.Outcome, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Err, At: r.cfg.Clock.Now(), Response: res.Response}
}

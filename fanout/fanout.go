package fanout

import (
	"context"
	"fmt"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/bodyurl"
	"github.com/intakehq/intake/rules"
)

// Judged is the fan-out of a message's events judged before their settle,
// and the call slots held for the first calls the settle may lease.
type Judged struct {
	// FanOuts are the fan-outs by event id (intake.Settlement.FanOuts);
	// nil when there are none.
	FanOuts map[string]intake.FanOut
	held    *Held
}

// Judge fans out the events a message's settle is about to create, before
// it, so that the settle writes their routes with them (see
// intake.Settlement.FanOuts) and no filter or ordering key runs while the
// store writes: the worker calls it with the message's events and the
// rules' views it built of them. It holds a call slot for each route to a
// consumer that nothing paces, as the org's shares allow, for the first
// calls the settle may lease; Settled then gives back those the settle did
// not lease, and the settle's hand-off (handoff.Calls) brings the calls to
// the router, which makes them on their slots. An event it cannot judge,
// or a replay (whose original the settle finds), has no fan-out: a
// router's claim takes it.
func (j *Judger) Judge(ctx context.Context, m *intake.Message, events []intake.Event, views map[string]*rules.EventView) Judged {
	held := NewHeld(m.OrgID)
	oc := j.orgConsumers(ctx, m.OrgID)
	if oc.err != nil {
		return Judged{held: held}
	}
	b := &Batch{consumers: map[string]orgConsumers{m.OrgID: oc},
		requests: map[string]intake.OriginalRequest{m.ID: {Query: m.Query, Header: m.Header}}}
	j.readCredentials(ctx, b, []string{m.ConnectionID})
	out := map[string]intake.FanOut{}
	for i := range events {
		e := &events[i]
		if e.Replay {
			continue
		}
		view := views[e.ID]
		if view == nil || (e.DataTruncated && len(j.cfg.BodyURLs.Key) > 0) {
			// Consumers of a truncated event receive a body URL, which the
			// worker's view does not carry.
			view = rules.NewEventView(j.Envelope(e), b.Origin(e))
		}
		if f, err := j.JudgeEvent(ctx, e, view, b, nil, held); err == nil {
			out[e.ID] = f
		}
	}
	return Judged{FanOuts: out, held: held}
}

// Settled accounts for the settle of what Judge judged: it gives back the
// slots held for routes the settle did not lease (a consumer whose breaker
// tripped since, an event not created, a settle that failed: out is then
// zero), which the router would never call, and counts the fan-outs the
// settle wrote (FannedOut). The calls it leased keep their slots until
// the router has made them.
func (j *Judger) Settled(jd Judged, out intake.Settled) {
	for i := range out.Events {
		e := &out.Events[i]
		f, ok := jd.FanOuts[e.ID]
		if !ok || e.AwaitsFanOut() { // the settle left it to a claim
			continue
		}
		j.FannedOut(e, e.State, f.Routes)
	}
	if jd.held != nil {
		j.GiveBack(jd.held, out.Calls)
	}
}

// JudgeEvent is the one fan-out: it selects e's consumers (but those in
// done, which a re-routed event finished), judges each one's filter,
// computes its ordering key, and holds a call slot in held for each route
// it may lease. An error (the consumers, or the request their rules read,
// could not be read) gives back what it held: no verdict.
func (j *Judger) JudgeEvent(ctx context.Context, e *intake.Event, in *rules.EventView, b *Batch, done map[string]bool, held *Held) (intake.FanOut, error) {
	oc := b.consumers[e.OrgID]
	if oc.err != nil {
		return intake.FanOut{}, fmt.Errorf("consumers unavailable: %w", oc.err)
	}
	f := intake.FanOut{EventID: e.ID, Lease: j.cfg.Lease}
	mine := NewHeld(e.OrgID)
	for _, c := range intake.SelectConsumers(e, oc.list) {
		if done[c.ID] {
			continue
		}
		route, err := j.judge(ctx, e, c, in)
		if err != nil {
			j.GiveBack(mine, nil)
			return intake.FanOut{}, fmt.Errorf("request unavailable for consumer %s: %w", c.ID, err)
		}
		j.take(mine, &c, &route)
		f.Routes = append(f.Routes, route)
	}
	held.add(mine)
	return f, nil
}

// State names the state a fan-out left its event in, for traces and
// metrics: "routed" while its routes wait.
func State(s intake.EventState) string {
	if s == intake.EventPending || s == intake.EventRetrying || s == "" {
		return "routed"
	}
	return string(s)
}

// FannedOut accounts for a committed fan-out, on a claim or in a settle:
// the state it left the event in, and the records it wrote for routes it
// made no call for (filtered, or held for a paused consumer).
func (j *Judger) FannedOut(e *intake.Event, to intake.EventState, routes []intake.FanOutRoute) {
	state := State(to)
	for _, rt := range routes {
		if rt.Delivery != nil {
			j.Count(rt.ConsumerID, rt.Delivery.Outcome)
		}
	}
	if state == string(intake.EventNoConsumer) {
		j.cfg.Logger.Info("router: no consumer", "event_id", e.ID, "type", e.Type)
	}
	j.cfg.Metrics.FanOuts.WithLabelValues(state).Inc()
}

// judge runs one selected consumer's filter and computes its ordering
// key. An error means the request its rules read could not be read: no
// verdict.
func (j *Judger) judge(ctx context.Context, e *intake.Event, c intake.Consumer, in *rules.EventView) (intake.FanOutRoute, error) {
	route := intake.FanOutRoute{ConsumerID: c.ID}
	if c.Filter != "" {
		fin, err := in.Input()
		if err != nil {
			return route, err
		}
		ok, err := j.cfg.Rules.Filter(ctx, c.Filter, fin)
		switch {
		case ctx.Err() != nil:
			return route, ctx.Err()
		case err != nil || !ok:
			d := j.Record(e, c.ID, 1, delivery.Result{Outcome: intake.DeliveryFiltered})
			if err != nil {
				d.Error = intake.FilterErrorPrefix + err.Error()
			}
			route.Filtered, route.Delivery = true, &d
			return route, nil
		}
	}
	if c.Controls.Paused {
		d := j.Record(e, c.ID, 0, delivery.Result{Outcome: intake.DeliveryHeld,
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
		if route.OrderKey, err = j.cfg.Rules.Key(ctx, o, fin); err != nil {
			if ctx.Err() != nil {
				return route, ctx.Err()
			}
			j.cfg.Logger.Warn("router: the ordering key failed; the event is delivered unordered", "event_id", e.ID, "consumer_id", c.ID, "err", err)
		}
	}
	return route, nil
}

// Envelope is the event as consumers receive it, with a fresh body URL
// when its data was truncated.
func (j *Judger) Envelope(e *intake.Event) intake.Envelope {
	env := intake.NewEnvelope(e)
	if e.DataTruncated && len(j.cfg.BodyURLs.Key) > 0 {
		env.BodyURL = j.cfg.BodyURLs.URL(e.MessageID, j.cfg.Clock.Now().Add(bodyurl.TTL))
	}
	return env
}

// Record is the delivery record of one call (or of a decision to make
// none).
func (j *Judger) Record(e *intake.Event, consumerID string, attempt int, res delivery.Result) intake.Delivery {
	return intake.Delivery{ID: intake.NewID(), OrgID: e.OrgID, EventID: e.ID, ConsumerID: consumerID, Attempt: attempt,
		Outcome: res.Outcome, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Err, At: j.cfg.Clock.Now(), Response: res.Response}
}

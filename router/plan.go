package router

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/rules"
)

// Planner fans out the events a message's settle is about to create (see
// intake.Settlement.Plan). It judges them now, before the transaction
// opens, so that no filter or ordering key runs while the transaction holds
// its locks (on SQLite, the one writer): with the org's consumers, and the
// message's request for the rules that read it. The routes to consumers
// that nothing paces are leased to this process when it has a free call
// slot for each. It returns nil when the consumers cannot be read: the
// settle then leaves its events to a router's claim.
func (r *Router) Planner(ctx context.Context, m *intake.Message, events []intake.Event) intake.FanOutPlanner {
	oc := r.orgConsumers(ctx, m.OrgID)
	if oc.err != nil {
		return nil
	}
	b := &batch{consumers: map[string]orgConsumers{m.OrgID: oc},
		requests: map[string]intake.OriginalRequest{m.ID: {Query: m.Query, Header: m.Header}}}
	r.readCredentials(ctx, b, []string{m.ConnectionID})
	p := &planner{r: r, b: b, plans: map[string]plan{}, held: taken{org: m.OrgID}}
	for i := range events {
		e := &events[i]
		if e.Replay {
			continue // the settle finds what it replays, which its envelope names
		}
		f, ok := r.plan(ctx, e, b, &p.held)
		if !ok {
			continue
		}
		p.plans[e.ID] = plan{f: f, subject: e.Subject != nil}
	}
	return p
}

// plan judges e's consumers as the fan-out stage does, and holds a call
// slot for each route to a consumer that nothing paces, as its shares
// allow; the routes without one are unleased. ok is false when e's
// request cannot be read for its rules.
func (r *Router) plan(ctx context.Context, e *intake.Event, b *batch, held *taken) (f intake.FanOut, ok bool) {
	in := rules.NewEventView(r.envelope(e), b.origin(e))
	f.EventID, f.Lease = e.ID, r.cfg.Lease
	for _, c := range intake.SelectConsumers(e, b.consumers[e.OrgID].list) {
		route, err := r.judge(ctx, e, c, in)
		if err != nil {
			return intake.FanOut{}, false
		}
		r.take(held, &c, &route)
		f.Routes = append(f.Routes, route)
	}
	return f, true
}

// planner holds the fan-outs of one settle's events, judged before it;
// their calls are started once the settle has committed.
type planner struct {
	r     *Router
	b     *batch
	plans map[string]plan
	held  taken // call slots held for the routes the settle may lease
}

// plan is one event's fan-out, and whether the event had a subject when it
// was judged.
type plan struct {
	f       intake.FanOut
	subject bool
}

// Plan returns e's fan-out as judged before the settle, unless the settle
// found e a subject since (its consumers and envelope depend on it): such
// an event is left to a router's claim.
func (p *planner) Plan(e intake.Event) (intake.FanOut, bool) {
	pl, ok := p.plans[e.ID]
	if !ok || (e.Subject != nil) != pl.subject {
		return intake.FanOut{}, false
	}
	return pl.f, true
}

// Started accounts for what the settle committed and starts the calls it
// leased, each on a slot Plan reserved and in the trace of its event's
// fan-out span; the slots not used are freed.
func (p *planner) Started(ctx context.Context, out intake.Settled) {
	r := p.r
	calls := map[string][]intake.RouteClaim{}
	for _, c := range out.Calls {
		calls[c.Event.ID] = append(calls[c.Event.ID], c)
	}
	for i := range out.Events {
		e := &out.Events[i]
		pl, ok := p.plans[e.ID]
		if !ok || e.AwaitsFanOut() { // the settle did not use its plan
			continue
		}
		state := "routed"
		if e.State != intake.EventPending {
			state = string(e.State)
		}
		sctx, span := startRoute(ctx, intake.EventClaim{Event: *e, Attempt: 1})
		traceFannedOut(sctx, state, len(pl.f.Routes), nil)
		for _, c := range calls[e.ID] {
			r.startReserved(sctx, c, p.b)
		}
		span.End()
		r.fannedOut(e, state, pl.f.Routes)
	}
	r.giveBack(&p.held, out.Calls)
}

// Cancel frees the slots of a settle that did not commit.
func (p *planner) Cancel() {
	p.r.giveBack(&p.held, nil)
}

package router

import (
	"context"
	"sync"

	"github.com/intakehq/intake"
)

// Planner returns what a message's settle needs to fan its events out in
// its own transaction (see intake.Settlement.Plan): the org's consumers,
// read now, before the transaction opens, and the message's request for
// the rules that read it. It returns nil when the consumers cannot be read:
// the settle then leaves its events to a router's claim.
func (r *Router) Planner(ctx context.Context, m *intake.Message) intake.FanOutPlanner {
	oc := r.orgConsumers(ctx, m.OrgID)
	if oc.err != nil {
		return nil
	}
	b := &batch{consumers: map[string]orgConsumers{m.OrgID: oc},
		requests: map[string]intake.OriginalRequest{m.ID: {Query: m.Query, Header: m.Header}}}
	return &planner{r: r, ctx: ctx, b: b, plans: map[string]intake.FanOut{}}
}

// planner fans the events of one settle out; its calls are started once
// the settle has committed.
type planner struct {
	r   *Router
	ctx context.Context
	b   *batch

	mu       sync.Mutex
	plans    map[string]intake.FanOut // by event, the last plan made
	reserved int                      // call slots taken for leased routes
}

// Plan judges e's consumers as the fan-out stage does. The routes to
// consumers that nothing paces are leased to this process when it has a
// free call slot for each, which Started then uses.
func (p *planner) Plan(e intake.Event) (intake.FanOut, bool) {
	r := p.r
	in := newRuleInput(&e, r.envelope(&e), p.b)
	f := intake.FanOut{EventID: e.ID}
	unpaced := 0
	for _, c := range intake.SelectConsumers(&e, p.b.consumers[e.OrgID].list) {
		route, err := r.judge(p.ctx, &e, c, in)
		if err != nil {
			return intake.FanOut{}, false // its request cannot be read: the router's claim will judge it
		}
		if !route.Filtered && c.Controls.Unpaced() {
			unpaced++
		}
		f.Routes = append(f.Routes, route)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if unpaced > 0 && r.reserve(unpaced) {
		p.reserved += unpaced
		f.Lease = r.cfg.Lease
	}
	p.plans[e.ID] = f
	return f, true
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
		f, ok := p.plans[e.ID]
		if !ok || intake.Unrouted(out.Events[i:i+1]) {
			continue
		}
		state := "routed"
		if e.State != intake.EventPending {
			state = string(e.State)
		}
		sctx, span := startRoute(ctx, intake.EventClaim{Event: *e, Attempt: 1})
		traceFannedOut(sctx, state, len(f.Routes), nil)
		for _, c := range calls[e.ID] {
			r.startReserved(sctx, c, p.b)
		}
		span.End()
		for _, rt := range f.Routes {
			if rt.Filtered {
				r.count(rt.ConsumerID, intake.DeliveryFiltered)
			}
		}
		r.cfg.Metrics.FanOuts.WithLabelValues(state).Inc()
	}
	p.mu.Lock()
	spare := p.reserved - len(out.Calls)
	p.reserved = 0
	p.mu.Unlock()
	r.release(spare)
}

// Cancel frees the slots of a settle that did not commit.
func (p *planner) Cancel() {
	p.mu.Lock()
	spare := p.reserved
	p.reserved = 0
	p.mu.Unlock()
	p.r.release(spare)
}

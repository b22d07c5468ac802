package router

import (
	"context"

	"github.com/intakehq/intake"
)

// startSettled makes the first calls of the settles handed over (see
// Judge), each in the trace of its event's fan-out, on the slots Judge
// held for them, and frees the slots of the routes the settles did not
// lease. It returns how many calls it started.
func (r *Router) startSettled(ctx context.Context, calls interface{ Go(func()) }) int {
	n := 0
	for _, s := range r.cfg.Calls.Take() {
		held := &taken{org: s.OrgID, n: map[string]int{}}
		for _, f := range s.FanOuts {
			for _, rt := range f.Routes {
				if !rt.Unleased {
					held.n[rt.ConsumerID]++
				}
			}
		}
		leased := map[string][]intake.RouteClaim{}
		for _, c := range s.Settled.Calls {
			leased[c.Event.ID] = append(leased[c.Event.ID], c)
		}
		b := r.readFor(ctx, s.Settled.Calls)
		for i := range s.Settled.Events {
			e := &s.Settled.Events[i]
			f, ok := s.FanOuts[e.ID]
			if !ok || e.AwaitsFanOut() { // the settle left it to a claim
				continue
			}
			sctx, span := startRoute(ctx, intake.EventClaim{Event: *e, Attempt: 1})
			traceFannedOut(sctx, fanOutState(e.State), len(f.Routes), nil)
			for _, c := range leased[e.ID] {
				r.run(sctx, calls, c, b)
				n++
			}
			span.End()
			r.fannedOut(e, e.State, f.Routes)
		}
		r.giveBack(held, s.Settled.Calls)
	}
	return n
}

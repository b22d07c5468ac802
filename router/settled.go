package router

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/fanout"
)

// startSettled makes the first calls of the settles handed over, each in
// the trace of its event's fan-out, on the slots the Judger held for them
// when the worker had the fan-out judged; the worker gave back the slots of
// the routes the settle did not lease, and counted its fan-outs
// (fanout.Judger.Settled). It returns how many calls it started.
func (r *Router) startSettled(ctx context.Context, calls interface{ Go(func()) }) int {
	n := 0
	for _, s := range r.cfg.Calls.Take() {
		leased := map[string][]intake.RouteClaim{}
		for _, c := range s.Settled.Calls {
			leased[c.Event.ID] = append(leased[c.Event.ID], c)
		}
		b := r.fo.ReadFor(ctx, s.Settled.Calls)
		for i := range s.Settled.Events {
			e := &s.Settled.Events[i]
			f, ok := s.FanOuts[e.ID]
			if !ok || e.AwaitsFanOut() { // the settle left it to a claim
				continue
			}
			sctx, span := startRoute(ctx, intake.EventClaim{Event: *e, Attempt: 1})
			traceFannedOut(sctx, fanout.State(e.State), len(f.Routes), nil)
			for _, c := range leased[e.ID] {
				r.run(sctx, calls, c, b)
				n++
			}
			span.End()
		}
	}
	return n
}

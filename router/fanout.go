package router

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/rules"
)

// fanOut fans out a claimed event: it judges the event (the Judger's
// JudgeEvent) and writes its routes. It returns the calls the store leased
// to this process in the same commit. An event it cannot judge (its
// consumers or its request could not be read) is left as it is: its lease
// runs out and it is claimed again. The context returned carries the
// fan-out's span, the parent of those calls.
func (r *Router) fanOut(ctx context.Context, ec intake.EventClaim, b *fanout.Batch) (context.Context, []intake.RouteClaim) {
	ctx, span := startRoute(ctx, ec)
	defer span.End()
	e := &ec.Event
	held := fanout.NewHeld(e.OrgID)
	f, err := r.fo.JudgeEvent(ctx, e, rules.NewEventView(r.fo.Envelope(e), b.Origin(e)), b, ec.Done, held)
	if err != nil {
		r.cfg.Logger.Error("router: the event cannot be judged; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", err)
		traceUnrouted(ctx, err.Error())
		return ctx, nil
	}
	f.Attempt = ec.Attempt
	out, err := r.cfg.Store.FanOut(ctx, r.cfg.Clock.Now(), f)
	r.fo.GiveBack(held, out.Calls)
	traceFannedOut(ctx, fanout.State(out.State), len(f.Routes), err)
	switch {
	case intake.ErrorCode(err) == intake.ESTALE:
		r.cfg.Logger.Info("router: fan-out lost its lease; result dropped", "event_id", e.ID, "attempt", ec.Attempt)
		return ctx, nil
	case err != nil:
		r.cfg.Logger.Error("router: fan-out failed; the lease will expire and the event be fanned out again", "event_id", e.ID, "err", err)
		return ctx, nil
	}
	r.fo.FannedOut(e, out.State, f.Routes)
	return ctx, out.Calls
}

package control

import (
	"context"
	"fmt"

	"github.com/intakehq/intake"
)

// Retry makes the waiting routes sel selects due now (DESIGN §20): an
// event's, a consumer's, or a consumer's routes of some events (an
// issue's). No attempt is spent or restored, a route whose call is being
// made is left alone, and a tripped consumer among them gets its breaker's
// one probe now. A dead, no_consumer or filtered event is re-routed, not
// retried (ECONFLICT naming the re-route); an event with nothing waiting is
// no error: its retry makes 0 events due. A consumer's retry takes at most
// the bulk maximum of events, the earliest due first, and runs as the
// org's one bulk action at a time. An issue's retry (sel.IssueID) is
// audited as the issue's. With dryRun nothing changes and nothing
// is audited; the answer is the same count and first events.
func (p *Plane) Retry(ctx context.Context, c Caller, sel intake.RetrySelection, dryRun bool) (intake.Retried, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Retried{}, err
	}
	if err := sel.Validate(); err != nil {
		return intake.Retried{}, err
	}
	if len(sel.EventIDs) > p.budgets.bulkMax {
		return intake.Retried{}, intake.Errorf(intake.EINVALID, "a retry takes at most %d events, not %d", p.budgets.bulkMax, len(sel.EventIDs))
	}
	var a intake.AuditEntry
	if sel.EventID != "" {
		e, err := p.store.Event(ctx, c.Scope, sel.EventID)
		if err != nil {
			return intake.Retried{}, err
		}
		if err := intake.CheckRetry(e.ID, e.State); err != nil {
			return intake.Retried{}, err
		}
		a = p.entry(c, e.OrgID, "event.retry", "event", e.ID)
	} else {
		cs, err := p.store.Consumer(ctx, c.Scope, sel.ConsumerID)
		if err != nil {
			return intake.Retried{}, err
		}
		switch {
		case sel.IssueID != "":
			a = p.entry(c, cs.OrgID, "issue.retry", "issue", sel.IssueID, fmt.Sprintf("consumer=%s, %d events", cs.ID, len(sel.EventIDs)))
		case len(sel.EventIDs) > 0:
			a = p.entry(c, cs.OrgID, "consumer.retry", "consumer", cs.ID, fmt.Sprintf("%d selected events", len(sel.EventIDs)))
		default:
			a = p.entry(c, cs.OrgID, "consumer.retry", "consumer", cs.ID, "all waiting events")
		}
		release, err := p.takeBulk(ctx, c)
		if err != nil {
			return intake.Retried{}, err
		}
		defer release()
	}
	if dryRun {
		return budgeted(ctx, p, c, func(ctx context.Context) (intake.Retried, error) {
			return p.store.RetryNow(ctx, c.Scope, sel, p.now(), p.budgets.bulkMax, true)
		})
	}
	return p.store.RetryNow(ctx, c.Scope, sel, p.now(), p.budgets.bulkMax, false, a)
}

// MaxConsumerDeliveries is the most of a consumer's last deliveries one
// read lists.
const MaxConsumerDeliveries = 100

// ConsumerStats reads a consumer's calls by hour over 24 hours or by day
// over 7 days (DESIGN §20), as a budgeted read.
func (p *Plane) ConsumerStats(ctx context.Context, c Caller, id string, w intake.StatsWindow) ([]intake.DeliveryBucket, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return nil, err
	}
	if _, _, _, err := w.Buckets(p.now()); err != nil {
		return nil, err
	}
	if _, err := p.store.Consumer(ctx, c.Scope, id); err != nil {
		return nil, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) ([]intake.DeliveryBucket, error) {
		return p.store.ConsumerStats(ctx, c.Scope, id, w, p.now())
	})
}

// ConsumerDeliveries lists a consumer's last limit deliveries (at most
// MaxConsumerDeliveries), newest first.
func (p *Plane) ConsumerDeliveries(ctx context.Context, c Caller, id string, limit int) ([]intake.Delivery, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return nil, err
	}
	if _, err := p.store.Consumer(ctx, c.Scope, id); err != nil {
		return nil, err
	}
	limit = min(max(limit, 1), MaxConsumerDeliveries)
	return budgeted(ctx, p, c, func(ctx context.Context) ([]intake.Delivery, error) {
		return p.store.ConsumerDeliveries(ctx, c.Scope, id, limit)
	})
}

package control

import (
	"context"
	"slices"

	"github.com/intakehq/intake"
)

// Issues lists the caller's issues that q selects, the last seen first
// (DESIGN §20).
func (p *Plane) Issues(ctx context.Context, c Caller, q intake.IssueQuery) (intake.Page[intake.Issue], error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Page[intake.Issue]{}, err
	}
	if err := checkIssueQuery(q); err != nil {
		return intake.Page[intake.Issue]{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (intake.Page[intake.Issue], error) {
		return p.store.ListIssues(ctx, c.Scope, q)
	})
}

func checkIssueQuery(q intake.IssueQuery) error {
	if q.Status != "" && !slices.Contains(intake.IssueStatuses, q.Status) {
		return intake.Errorf(intake.EINVALID, "status must be open, acknowledged, resolved or dismissed, not %.50q", q.Status)
	}
	if q.Kind != "" && !slices.Contains(intake.IssueKinds, q.Kind) {
		return intake.Errorf(intake.EINVALID, "kind must be delivery, rule, request or backlog, not %.50q", q.Kind)
	}
	if q.ConsumerID != "" {
		if err := intake.CheckID("consumer_id", q.ConsumerID); err != nil {
			return err
		}
	}
	if q.ConnectionID != "" {
		if err := intake.CheckID("connection_id", q.ConnectionID); err != nil {
			return err
		}
	}
	return nil
}

// IssueDetail is an issue with a page of the events (or messages) it
// touched, the last failed first.
type IssueDetail struct {
	intake.Issue
	Items intake.Page[intake.IssueItem]
}

// Issue reads one of the caller's issues with a page of its items.
func (p *Plane) Issue(ctx context.Context, c Caller, id string, q intake.IssueItemsQuery) (IssueDetail, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return IssueDetail{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return IssueDetail{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (IssueDetail, error) {
		i, err := p.store.Issue(ctx, c.Scope, id)
		if err != nil {
			return IssueDetail{}, err
		}
		items, err := p.store.IssueItems(ctx, c.Scope, id, q)
		return IssueDetail{Issue: i, Items: items}, err
	})
}

// CountOpenIssues counts the caller's open issues, for the console's nav.
func (p *Plane) CountOpenIssues(ctx context.Context, c Caller) (int, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return 0, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (int, error) {
		return p.store.CountOpenIssues(ctx, c.Scope)
	})
}

// UpdateIssue moves one of the caller's issues by hand (operator): open ↔
// acknowledged, either to dismissed. Only the issue itself resolves.
func (p *Plane) UpdateIssue(ctx context.Context, c Caller, id string, to intake.IssueStatus) (intake.Issue, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Issue{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Issue{}, err
	}
	if err := intake.CheckIssueStatus(intake.IssueOpen, to); err != nil { // an unknown status, or resolved
		return intake.Issue{}, err
	}
	i, err := p.store.Issue(ctx, c.Scope, id)
	if err != nil {
		return intake.Issue{}, err
	}
	if err := intake.CheckIssueStatus(i.Status, to); err != nil {
		return intake.Issue{}, err
	}
	action := map[intake.IssueStatus]string{intake.IssueOpen: "issue.reopen", intake.IssueAcknowledged: "issue.acknowledge",
		intake.IssueDismissed: "issue.dismiss"}[to]
	return p.store.SetIssueStatus(ctx, c.Scope, id, to, p.now(),
		p.entry(c, i.OrgID, action, "issue", id, string(i.Kind), " issue of ", i.SubjectName, ": ", i.Cause, " ", i.Status, " → ", to))
}

// RetryIssue makes every retrying or held event of an issue due now
// (DESIGN §20), as Retry does for a consumer's: a delivery or rule issue's
// events that still wait for its consumer, a backlog issue's whole backlog.
// A request issue's messages are not retried but replayed (ECONFLICT
// naming how).
func (p *Plane) RetryIssue(ctx context.Context, c Caller, id string, dryRun bool) (intake.Retried, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Retried{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Retried{}, err
	}
	i, err := p.store.Issue(ctx, c.Scope, id)
	if err != nil {
		return intake.Retried{}, err
	}
	sel := intake.RetrySelection{ConsumerID: i.ConsumerID, IssueID: i.ID}
	switch i.Kind {
	case intake.IssueRequest:
		return intake.Retried{}, intake.Errorf(intake.ECONFLICT, "issue %s is about requests to a connection, which are not retried: "+
			"replay its messages once the connection's secret is right (POST /api/v1/messages/replay, or the message's Replay)", i.ID)
	case intake.IssueBacklog:
		// The backlog is every event waiting for the consumer.
	default:
		ids, err := p.issueEvents(ctx, c, i.ID)
		if err != nil {
			return intake.Retried{}, err
		}
		if len(ids) == 0 {
			return intake.Retried{Items: []intake.Event{}}, nil
		}
		sel.EventIDs = ids
	}
	return p.Retry(ctx, c, sel, dryRun)
}

// issueEvents lists the ids of an issue's events still kept, the last
// failed first, at most the bulk bound.
func (p *Plane) issueEvents(ctx context.Context, c Caller, id string) ([]string, error) {
	var ids []string
	q := intake.IssueItemsQuery{Limit: intake.MaxPageSize}
	for len(ids) < p.budgets.bulkMax {
		page, err := budgeted(ctx, p, c, func(ctx context.Context) (intake.Page[intake.IssueItem], error) {
			return p.store.IssueItems(ctx, c.Scope, id, q)
		})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if it.EventID != "" && len(ids) < p.budgets.bulkMax {
				ids = append(ids, it.EventID)
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	return ids, nil
}

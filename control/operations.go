package control

import (
	"context"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

// maxObjectID bounds a provider object id: provider ids and node ids are
// far shorter.
const maxObjectID = 500

// NewSubjectLink is an app's claim that a provider object is one of its
// records.
type NewSubjectLink struct {
	ConnectionID     string
	ProviderObjectID string
	App              string
	RecordID         string
}

// PutSubjectLink records that a provider object is a record of an app, so
// the events about it go back to that app's completion consumers.
func (p *Plane) PutSubjectLink(ctx context.Context, c Caller, n NewSubjectLink) (intake.SubjectLink, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.SubjectLink{}, err
	}
	if n.ConnectionID == "" {
		return intake.SubjectLink{}, intake.Errorf(intake.EINVALID, "connection_id is required")
	}
	if err := intake.CheckID("connection_id", n.ConnectionID); err != nil {
		return intake.SubjectLink{}, err
	}
	if n.ProviderObjectID == "" {
		return intake.SubjectLink{}, intake.Errorf(intake.EINVALID, "provider_object_id is required")
	}
	if len(n.ProviderObjectID) > maxObjectID {
		return intake.SubjectLink{}, intake.Errorf(intake.EINVALID, "provider_object_id must be at most %d bytes", maxObjectID)
	}
	if err := intake.CheckName("app", n.App); err != nil {
		return intake.SubjectLink{}, err
	}
	if err := intake.CheckName("record_id", n.RecordID); err != nil {
		return intake.SubjectLink{}, err
	}
	cn, err := p.store.Connection(ctx, c.Scope, n.ConnectionID)
	if err != nil {
		return intake.SubjectLink{}, err
	}
	l := intake.SubjectLink{ID: intake.NewID(), OrgID: cn.OrgID, ConnectionID: cn.ID, ProviderObjectID: n.ProviderObjectID,
		App: n.App, RecordID: n.RecordID, CreatedAt: p.now()}
	if err := p.store.PutSubjectLink(ctx, c.Scope, l, p.entry(c, l.OrgID, "subject_link.put", "subject_link", l.ID, "app=", l.App)); err != nil {
		return intake.SubjectLink{}, err
	}
	return l, nil
}

// Delete soft-deletes a connection (with its endpoints), an endpoint or a
// consumer: it disappears from every read at once, its history stays.
func (p *Plane) Delete(ctx context.Context, c Caller, kind intake.DeleteKind, id string) error {
	if err := c.may(intake.RoleAdmin); err != nil {
		return err
	}
	if err := intake.CheckID("id", id); err != nil {
		return err
	}
	var orgID string
	var err error
	switch kind {
	case intake.DeleteConnection:
		var cn intake.Connection
		cn, err = p.store.Connection(ctx, c.Scope, id)
		orgID = cn.OrgID
	case intake.DeleteEndpoint:
		var e intake.Endpoint
		e, err = p.store.Endpoint(ctx, c.Scope, id)
		orgID = e.OrgID
	case intake.DeleteConsumer:
		var cs intake.Consumer
		cs, err = p.store.Consumer(ctx, c.Scope, id)
		orgID = cs.OrgID
	default:
		return intake.Errorf(intake.EINVALID, "cannot delete a %s", kind)
	}
	if err != nil {
		return err
	}
	if err := p.store.Delete(ctx, c.Scope, kind, id, p.now(), p.entry(c, orgID, string(kind)+".delete", string(kind), id)); err != nil {
		return err
	}
	if kind == intake.DeleteConsumer {
		p.sender.Forget(id) // a broker connection kept for it
	}
	return nil
}

// EraseBodies deletes an endpoint's stored payloads received in [since,
// until) on the org's request; the messages and their deduplication keys
// stay. It returns how many bodies it erased.
func (p *Plane) EraseBodies(ctx context.Context, c Caller, endpointID string, since, until time.Time) (int, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return 0, err
	}
	if err := intake.CheckID("id", endpointID); err != nil {
		return 0, err
	}
	if err := checkRange(since, until); err != nil {
		return 0, err
	}
	ep, err := p.store.Endpoint(ctx, c.Scope, endpointID)
	if err != nil {
		return 0, err
	}
	a := p.entry(c, ep.OrgID, "endpoint.erase", "endpoint", ep.ID,
		fmt.Sprintf("since=%s until=%s", since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)))
	return p.store.EraseBodies(ctx, a.At, c.Scope, ep.ID, since, until, a)
}

func checkRange(since, until time.Time) error {
	switch {
	case since.IsZero() || until.IsZero():
		return intake.Errorf(intake.EINVALID, "since and until are required")
	case !since.Before(until):
		return intake.Errorf(intake.EINVALID, "since must be before until")
	}
	return nil
}

// Reroute takes one dead, no_consumer or filtered event back to pending
// with a fresh budget of attempts; consumers that handled it are not called
// again.
func (p *Plane) Reroute(ctx context.Context, c Caller, id string) error {
	if err := c.may(intake.RoleOperator); err != nil {
		return err
	}
	if err := intake.CheckID("id", id); err != nil {
		return err
	}
	e, err := p.store.Event(ctx, c.Scope, id)
	if err != nil {
		return err
	}
	return p.store.RerouteEvent(ctx, c.Scope, id, p.clock.Now(), p.entry(c, e.OrgID, "event.reroute", "event", id))
}

// RerouteWhere re-routes every re-routable event f selects (f.State empty:
// every such state), each with its own audit entry naming the search, and
// returns how many. One bulk action runs at a time per org (EBUSY past
// it), and a search selecting more than the bulk maximum is refused before
// anything is re-routed unless confirm, and then becomes a job a
// ReplayRunner carries out in paced batches.
func (p *Plane) RerouteWhere(ctx context.Context, c Caller, f intake.EventFilter, confirm bool) (BulkResult, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return BulkResult{}, err
	}
	release, err := p.takeBulk(ctx, c)
	if err != nil {
		return BulkResult{}, err
	}
	defer release()
	selected, _, total, err := p.selectReroutable(ctx, c, f, confirm)
	if err != nil {
		return BulkResult{}, err
	}
	if total > p.budgets.bulkMax {
		j, err := p.startBulkJob(ctx, c, intake.JobReroute, eventSelection(f), total, "events.reroute")
		if err != nil {
			return BulkResult{}, err
		}
		return BulkResult{Job: &j}, nil
	}
	query := describeSearch(string(f.State), f.Type, "", f.Search, f.Since, f.Until)
	n := 0
	for _, e := range selected {
		a := p.entry(c, e.org, "event.reroute", "event", e.id, "bulk (search: ", query, ")")
		done, err := intake.RerouteOutcome(p.store.RerouteEvent(ctx, c.Scope, e.id, p.clock.Now(), a))
		if err != nil {
			return BulkResult{Count: n}, err
		}
		if done {
			n++
		}
	}
	return BulkResult{Count: n}, nil
}

// PreviewRerouteWhere is RerouteWhere's dry run: how many events it would
// re-route and the first of them; nothing changes.
func (p *Plane) PreviewRerouteWhere(ctx context.Context, c Caller, f intake.EventFilter) (Preview[intake.Event], error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return Preview[intake.Event]{}, err
	}
	release, err := p.takeBulk(ctx, c)
	if err != nil {
		return Preview[intake.Event]{}, err
	}
	defer release()
	_, first, total, err := p.selectReroutable(ctx, c, f, true)
	return Preview[intake.Event]{Count: total, Items: first}, err
}

// selectedEvent is what a re-route needs of an event, not its data: up to
// bulkMax of them are held at once.
type selectedEvent struct{ id, org string }

// selectReroutable checks a bulk re-route's search and selects its events,
// and the first PreviewItems of them whole, with how many it selects. A
// search selecting more than the bulk maximum selects none: it is refused,
// or, with countAll, counted (a count in each state, within the read
// budget and deadline, never its pages).
func (p *Plane) selectReroutable(ctx context.Context, c Caller, f intake.EventFilter, countAll bool) ([]selectedEvent, []intake.Event, int, error) {
	states := reroutable()
	if f.State != "" {
		if intake.CheckEventTransition(f.State, intake.EventPending) != nil {
			return nil, nil, 0, intake.Errorf(intake.EINVALID, "only %s events can be re-routed", joinStates(states))
		}
		states = []intake.EventState{f.State}
	}
	if err := checkEventFilter(f); err != nil {
		return nil, nil, 0, err
	}
	if countAll {
		total, err := p.countReroutable(ctx, c, f, states)
		if err != nil || total > p.budgets.bulkMax {
			var first []intake.Event
			for _, st := range states {
				if err != nil || len(first) == PreviewItems {
					break
				}
				g := f
				g.State, g.Limit, g.Cursor = st, PreviewItems-len(first), ""
				var page intake.Page[intake.Event]
				page, err = p.Events(ctx, c, g)
				first = append(first, page.Items...)
			}
			return nil, first, total, err
		}
	}
	var selected []selectedEvent
	var first []intake.Event
	total := 0
	for _, st := range states {
		g := f
		g.State, g.Limit, g.Cursor = st, intake.MaxPageSize, ""
		for total <= p.budgets.bulkMax {
			page, err := p.Events(ctx, c, g)
			if err != nil {
				return nil, nil, 0, err
			}
			for _, e := range page.Items {
				total++
				if total <= p.budgets.bulkMax {
					selected = append(selected, selectedEvent{e.ID, e.OrgID})
				}
				if len(first) < PreviewItems {
					first = append(first, e)
				}
			}
			if page.NextCursor == "" {
				break
			}
			g.Cursor = page.NextCursor
		}
	}
	if total > p.budgets.bulkMax {
		if !countAll {
			return nil, nil, 0, intake.Errorf(intake.EINVALID, "this search selects more than %d events, the most a bulk re-route takes at once: %s",
				p.budgets.bulkMax, confirmHint)
		}
		// More arrived since the count: counted again, as a job.
		n, err := p.countReroutable(ctx, c, f, states)
		return nil, first, max(n, total), err
	}
	return selected, first, total, nil
}

// countReroutable counts the events f selects in states, each state's a
// read within c's org's budget and deadline.
func (p *Plane) countReroutable(ctx context.Context, c Caller, f intake.EventFilter, states []intake.EventState) (int, error) {
	total := 0
	for _, st := range states {
		g := f
		g.State, g.Cursor = st, ""
		n, err := budgeted(ctx, p, c, func(ctx context.Context) (int, error) { return p.store.CountEvents(ctx, c.Scope, g) })
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// reroutable lists the event states an operator may take back to pending,
// as the transition table says.
func reroutable() []intake.EventState {
	var out []intake.EventState
	for _, st := range intake.EventStates {
		if intake.CheckEventTransition(st, intake.EventPending) == nil {
			out = append(out, st)
		}
	}
	return out
}

func joinStates(states []intake.EventState) string {
	s := ""
	for i, st := range states {
		switch {
		case i == 0:
		case i == len(states)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(st)
	}
	return s
}

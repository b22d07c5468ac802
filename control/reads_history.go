package control

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/intakehq/intake"
)

// Messages lists a page of the messages f selects.
func (p *Plane) Messages(ctx context.Context, c Caller, f intake.MessageFilter) (intake.Page[intake.Message], error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Page[intake.Message]{}, err
	}
	if err := checkMessageFilter(f); err != nil {
		return intake.Page[intake.Message]{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (intake.Page[intake.Message], error) {
		return p.store.ListMessages(ctx, c.Scope, f)
	})
}

// CountMessages counts every message f selects, past its page.
func (p *Plane) CountMessages(ctx context.Context, c Caller, f intake.MessageFilter) (int, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return 0, err
	}
	if err := checkMessageFilter(f); err != nil {
		return 0, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (int, error) { return p.store.CountMessages(ctx, c.Scope, f) })
}

// MessageAttempts lists the attempts at processing a message.
func (p *Plane) MessageAttempts(ctx context.Context, c Caller, id string) ([]intake.Attempt, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return nil, err
	}
	return p.store.MessageAttempts(ctx, c.Scope, id)
}

// MessageBody reads a message's whole raw body and the headers that
// describe it; ENOTFOUND once retention has erased it.
func (p *Plane) MessageBody(ctx context.Context, c Caller, id string) ([]byte, http.Header, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, nil, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return nil, nil, err
	}
	return p.readBody(ctx, c.Scope, id)
}

// OpenMessageBody streams a message's raw body from wherever it is kept,
// with its size and the headers that describe it; ENOTFOUND once retention
// has erased it. The caller closes it.
func (p *Plane) OpenMessageBody(ctx context.Context, c Caller, id string) (io.ReadCloser, int64, http.Header, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, 0, nil, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return nil, 0, nil, err
	}
	// A body read spends its message's org's budget of body reads, held
	// until the body is closed: staff (and the signed body addresses, which
	// read as staff) spend the org's whose body they read, so the
	// addresses one org's consumers follow hold up no other org's.
	key := budgetKey(c)
	if c.Staff() {
		m, err := p.store.Message(intake.OperatorRead(ctx), c.Scope, id)
		if err != nil {
			return nil, 0, nil, err
		}
		key = m.OrgID
	}
	release, err := p.budgets.bodies.Take(ctx, key, 1)
	if err != nil {
		return nil, 0, nil, busyError(err)
	}
	b, err := p.store.MessageBody(intake.OperatorRead(ctx), c.Scope, id)
	if err != nil {
		release()
		return nil, 0, nil, err
	}
	r, size, err := b.Open(ctx, p.blobs)
	if err != nil {
		release()
		return nil, 0, nil, p.blobError(id, err)
	}
	return &releasing{ReadCloser: r, release: release}, size, b.Header, nil
}

// releasing gives a budget back when its body is closed.
type releasing struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (r *releasing) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(r.release)
	return err
}

// readBody reads a stored body whole, for the actions that judge it.
func (p *Plane) readBody(ctx context.Context, sc intake.Scope, id string) ([]byte, http.Header, error) {
	b, err := p.store.MessageBody(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	body, err := intake.ReadBody(ctx, p.blobs, b.Body, b.BlobKey)
	if err != nil {
		return nil, nil, p.blobError(id, err)
	}
	return body, b.Header, nil
}

// blobError is what a reader is told when a body's object cannot be read:
// object storage is unavailable (503), never that the body is gone.
func (p *Plane) blobError(id string, err error) error {
	if code := intake.ErrorCode(err); code == intake.EUNAVAILABLE {
		return err
	}
	p.log.Error("control: a body's object could not be read", "message_id", id, "err", err)
	return &intake.Error{Code: intake.EUNAVAILABLE, Message: "object storage is unavailable; try again shortly", Err: err}
}

// Events lists a page of the events f selects.
func (p *Plane) Events(ctx context.Context, c Caller, f intake.EventFilter) (intake.Page[intake.Event], error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Page[intake.Event]{}, err
	}
	if err := checkEventFilter(f); err != nil {
		return intake.Page[intake.Event]{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (intake.Page[intake.Event], error) {
		return p.store.ListEvents(ctx, c.Scope, f)
	})
}

// Unclaimed lists the events no consumer wanted, across every org, so staff
// see which integrations nobody subscribes to yet. It is staff's alone: an
// org's caller is refused (EFORBIDDEN), whichever transport it came by; its
// own such events are Events in state no_consumer.
func (p *Plane) Unclaimed(ctx context.Context, c Caller, limit int, cursor string) (intake.Page[intake.Event], error) {
	if err := c.RequireStaff(); err != nil {
		return intake.Page[intake.Event]{}, err
	}
	return p.Events(ctx, c, intake.EventFilter{State: intake.EventNoConsumer, Limit: limit, Cursor: cursor})
}

// Event reads one event.
func (p *Plane) Event(ctx context.Context, c Caller, id string) (intake.Event, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Event{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Event{}, err
	}
	return p.store.Event(ctx, c.Scope, id)
}

// NamedRoute is an event's way to one consumer, with that consumer's name
// (empty once the consumer is deleted) and the limit its attempts read
// against (intake.Route.MaxAttempts).
type NamedRoute struct {
	intake.Route
	Consumer    string
	MaxAttempts int
}

// NamedDelivery is one call to a consumer, with the consumer's name
// (empty once the consumer is deleted). Its MaxAttempts is the limit in
// force when the call was made, as recorded.
type NamedDelivery struct {
	intake.Delivery
	Consumer string
}

// EventDetail is an event with its routes and the calls made for it.
type EventDetail struct {
	intake.Event
	Routes     []NamedRoute
	Deliveries []NamedDelivery
}

// EventDetail reads an event with its routes and deliveries, each naming
// its consumer.
func (p *Plane) EventDetail(ctx context.Context, c Caller, id string) (EventDetail, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return EventDetail{}, err
	}
	e, err := p.Event(ctx, c, id)
	if err != nil {
		return EventDetail{}, err
	}
	ds, err := p.store.Deliveries(ctx, c.Scope, e.ID)
	if err != nil {
		return EventDetail{}, err
	}
	consumers, err := p.consumersByID(ctx, c)
	if err != nil {
		return EventDetail{}, err
	}
	routes, err := p.namedRoutes(ctx, c, []string{e.ID}, consumers)
	if err != nil {
		return EventDetail{}, err
	}
	out := EventDetail{Event: e, Routes: routes[e.ID], Deliveries: make([]NamedDelivery, 0, len(ds))}
	for _, d := range ds {
		nd := NamedDelivery{Delivery: d}
		if cs, ok := consumers[d.ConsumerID]; ok {
			nd.Consumer = cs.Name
		}
		out.Deliveries = append(out.Deliveries, nd)
	}
	return out, nil
}

// EventRoutes reads the events' routes, by event, each naming its consumer.
func (p *Plane) EventRoutes(ctx context.Context, c Caller, eventIDs []string) (map[string][]NamedRoute, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	for _, id := range eventIDs {
		if err := intake.CheckID("event_id", id); err != nil {
			return nil, err
		}
	}
	if len(eventIDs) == 0 {
		return map[string][]NamedRoute{}, nil
	}
	consumers, err := p.consumersByID(ctx, c)
	if err != nil {
		return nil, err
	}
	return p.namedRoutes(ctx, c, eventIDs, consumers)
}

func (p *Plane) namedRoutes(ctx context.Context, c Caller, eventIDs []string, consumers map[string]intake.Consumer) (map[string][]NamedRoute, error) {
	rs, err := p.store.EventRoutes(ctx, c.Scope, eventIDs)
	if err != nil {
		return nil, err
	}
	out := map[string][]NamedRoute{}
	for _, rt := range rs {
		nr := NamedRoute{Route: rt}
		limit := 0
		if cs, ok := consumers[rt.ConsumerID]; ok {
			nr.Consumer, limit = cs.Name, cs.Controls.Attempts()
		}
		nr.MaxAttempts = rt.MaxAttempts(limit)
		out[rt.EventID] = append(out[rt.EventID], nr)
	}
	return out, nil
}

// consumersByID are the consumers the caller sees, by id.
func (p *Plane) consumersByID(ctx context.Context, c Caller) (map[string]intake.Consumer, error) {
	cs, err := p.store.ListConsumers(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	out := make(map[string]intake.Consumer, len(cs))
	for _, cn := range cs {
		out[cn.ID] = cn
	}
	return out, nil
}

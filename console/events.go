package console

import (
	"net/http"

	"github.com/intakehq/intake"
)

// eventsView is the events page: a filtered page of events.
type eventsView struct {
	Consumers []option // for the consumer filter
	Items     []intake.Event
	States    []string
	Filter    eventFilter
	Next      string
	Paged     bool
	Orgs      map[string]string // org names, on the staff's cross-org lists
}

type eventFilter struct {
	Type, State, Consumer string
}

func (ef eventFilter) parse() (intake.EventFilter, error) {
	f := intake.EventFilter{Type: ef.Type, State: intake.EventState(ef.State), ConsumerID: ef.Consumer}
	if f.ConsumerID != "" && !intake.ValidID(f.ConsumerID) {
		return f, intake.Errorf(intake.EINVALID, "malformed consumer id")
	}
	if f.State != "" && !f.State.Valid() {
		return f, intake.Errorf(intake.EINVALID, "unknown state %q", truncate(ef.State, 40))
	}
	if len(f.Type) > 200 {
		return f, intake.Errorf(intake.EINVALID, "the type filter is at most 200 bytes")
	}
	return f, nil
}

func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	ef := eventFilter{Type: q.Get("type"), State: q.Get("state"), Consumer: q.Get("consumer")}
	v, err := c.eventPage(r, s.scope(), ef)
	if err != nil {
		return err
	}
	consumers, err := c.store.ListConsumers(r.Context(), s.scope())
	if err != nil {
		return err
	}
	for _, cons := range consumers {
		v.Consumers = append(v.Consumers, option{Value: cons.ID, Label: cons.Name + " (" + cons.App + ")"})
	}
	c.render(w, r, s, http.StatusOK, "events", "Events", v)
	return nil
}

// unclaimed lists the events no consumer wanted, across every org, so staff
// see which integrations nobody subscribes to yet.
func (c *Console) unclaimed(w http.ResponseWriter, r *http.Request, s *session) error {
	if !s.staff {
		return intake.Errorf(intake.ENOTFOUND, "staff only")
	}
	v, err := c.eventPage(r, intake.Scope{}, eventFilter{State: string(intake.EventNoConsumer)})
	if err != nil {
		return err
	}
	orgs, err := c.store.ListOrgs(r.Context(), intake.Scope{})
	if err != nil {
		return err
	}
	v.Orgs = map[string]string{}
	for _, o := range orgs {
		v.Orgs[o.ID] = o.Name
	}
	c.render(w, r, s, http.StatusOK, "unclaimed", "Unclaimed events", v)
	return nil
}

func (c *Console) eventPage(r *http.Request, sc intake.Scope, ef eventFilter) (eventsView, error) {
	f, err := ef.parse()
	if err != nil {
		return eventsView{}, err
	}
	f.Limit, f.Cursor = pageSize, r.URL.Query().Get("cursor")
	if f.Cursor != "" && !intake.ValidID(f.Cursor) {
		return eventsView{}, intake.Errorf(intake.EINVALID, "malformed page cursor")
	}
	page, err := c.store.ListEvents(r.Context(), sc, f)
	if err != nil {
		return eventsView{}, err
	}
	v := eventsView{Items: page.Items, States: eventStates(), Filter: ef, Paged: f.Cursor != ""}
	if page.NextCursor != "" {
		v.Next = queryString("type", ef.Type, "state", ef.State, "consumer", ef.Consumer, "cursor", page.NextCursor)
	}
	return v, nil
}

// eventView is an event's detail page.
type eventView struct {
	E          intake.Event
	Data       shownBody
	Routes     []routeRow
	Deliveries []deliveryRow
	Reroutable bool
}

// deliveryRow is a delivery attempt with its consumer's name and retry
// limit (0: the consumer was deleted).
type deliveryRow struct {
	intake.Delivery
	Consumer    string
	MaxAttempts int
}

// routeRow is an event's way to one consumer: the attempts it spent of
// that consumer's own limit (a re-route starts them afresh) and its last
// error.
type routeRow struct {
	intake.Route
	Consumer    string
	MaxAttempts int
}

// consumersByID are the consumers visible in sc by id, for their names
// and retry limits.
func (c *Console) consumersByID(r *http.Request, sc intake.Scope) (map[string]intake.Consumer, error) {
	cs, err := c.store.ListConsumers(r.Context(), sc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]intake.Consumer, len(cs))
	for _, cn := range cs {
		out[cn.ID] = cn
	}
	return out, nil
}

func newRouteRow(rt intake.Route, consumers map[string]intake.Consumer) routeRow {
	row := routeRow{Route: rt}
	if cn, ok := consumers[rt.ConsumerID]; ok {
		row.Consumer, row.MaxAttempts = cn.Name, cn.Controls.Attempts()
	}
	return row
}

func (c *Console) event(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	e, err := c.store.Event(r.Context(), s.scope(), id)
	if err != nil {
		return err
	}
	ds, err := c.store.Deliveries(r.Context(), s.scope(), e.ID)
	if err != nil {
		return err
	}
	consumers, err := c.consumersByID(r, s.scope())
	if err != nil {
		return err
	}
	routes, err := c.store.EventRoutes(r.Context(), s.scope(), []string{e.ID})
	if err != nil {
		return err
	}
	v := eventView{E: e, Data: showBody(e.Data), Reroutable: intake.CheckEventTransition(e.State, intake.EventPending) == nil}
	for _, rt := range routes {
		v.Routes = append(v.Routes, newRouteRow(rt, consumers))
	}
	for _, d := range ds {
		row := deliveryRow{Delivery: d}
		if cn, ok := consumers[d.ConsumerID]; ok {
			row.Consumer, row.MaxAttempts = cn.Name, cn.Controls.Attempts()
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	c.render(w, r, s, http.StatusOK, "event", "Event "+short(id), v)
	return nil
}

func (c *Console) rerouteEvent(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := c.ctl.Reroute(r.Context(), s.caller(), id); err != nil {
		return err
	}
	return redirect(w, r, "/console/events/"+id+"?flash=rerouted")
}

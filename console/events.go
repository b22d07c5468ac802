package console

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
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

// filter is the store's filter the form selects; the control plane checks it.
func (ef eventFilter) filter() intake.EventFilter {
	return intake.EventFilter{Type: ef.Type, State: intake.EventState(ef.State), ConsumerID: ef.Consumer}
}

func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	ef := eventFilter{Type: q.Get("type"), State: q.Get("state"), Consumer: q.Get("consumer")}
	f := ef.filter()
	f.Limit, f.Cursor = pageSize, q.Get("cursor")
	page, err := c.ctl.Events(r.Context(), s.caller(), f)
	if err != nil {
		return err
	}
	v := eventPage(page, ef, f.Cursor)
	consumers, err := c.ctl.Consumers(r.Context(), s.caller())
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
	cursor := r.URL.Query().Get("cursor")
	page, err := c.ctl.Unclaimed(r.Context(), s.caller(), pageSize, cursor)
	if err != nil {
		return err
	}
	v := eventPage(page, eventFilter{State: string(intake.EventNoConsumer)}, cursor)
	orgs, err := c.ctl.Orgs(r.Context(), s.caller())
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

// eventPage shows a page of events listed with ef, from cursor.
func eventPage(page intake.Page[intake.Event], ef eventFilter, cursor string) eventsView {
	v := eventsView{Items: page.Items, States: eventStates(), Filter: ef, Paged: cursor != ""}
	if page.NextCursor != "" {
		v.Next = queryString("type", ef.Type, "state", ef.State, "consumer", ef.Consumer, "cursor", page.NextCursor)
	}
	return v
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
type deliveryRow = control.NamedDelivery

// routeRow is an event's way to one consumer: the attempts it spent of
// that consumer's own limit (a re-route starts them afresh) and its last
// error.
type routeRow = control.NamedRoute

func (c *Console) event(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	d, err := c.ctl.EventDetail(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	v := eventView{E: d.Event, Data: showBody(d.Data), Routes: d.Routes, Deliveries: d.Deliveries,
		Reroutable: intake.CheckEventTransition(d.State, intake.EventPending) == nil}
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

package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// eventsView is the events page: a filtered page of events, or a search's.
type eventsView struct {
	Consumers []option // for the consumer filter
	Items     []intake.Event
	States    []string
	Filter    eventFilter
	Next      string
	Paged     bool
	Orgs      map[string]string // org names, on the staff's cross-org lists
	// Error says why the search could not run (a match that is not a JSON
	// object, say); the form keeps what was written.
	Error string
	// Reroutable: the search found dead, no_consumer or filtered events,
	// which the page offers to route again.
	Reroutable bool
	// Waiting: a route waits for a later attempt or is held, so a retry
	// now can hurry it.
	Waiting bool
}

// eventFilter is the events page's form, as written: its search as the
// admin API takes it.
type eventFilter struct {
	Type, State, Consumer, Match, Q, Since, Until string
}

func eventForm(v url.Values) eventFilter {
	return eventFilter{Type: v.Get("type"), State: v.Get("state"), Consumer: v.Get("consumer"), Match: v.Get("match"), Q: v.Get("q"),
		Since: v.Get("since"), Until: v.Get("until")}
}

// filter is the store's filter the form selects: its search read by the
// control plane's rules, which check the rest.
func (ef eventFilter) filter() (intake.EventFilter, error) {
	f := intake.EventFilter{Type: ef.Type, State: intake.EventState(ef.State), ConsumerID: ef.Consumer}
	var err error
	if f.Search, err = control.ParseSearch(ef.Match, ef.Q); err != nil {
		return f, err
	}
	if f.Since, err = formTime("since", ef.Since); err != nil {
		return f, err
	}
	f.Until, err = formTime("until", ef.Until)
	return f, err
}

// Searching reports whether the form searches events' data.
func (ef eventFilter) Searching() bool { return ef.Match != "" || ef.Q != "" }

// Filtered reports whether the form selects anything in particular.
func (ef eventFilter) Filtered() bool {
	return ef != eventFilter{}
}

// query is the form as a URL's query, with kv after it.
func (ef eventFilter) query(kv ...string) string {
	return queryString(append([]string{"type", ef.Type, "state", ef.State, "consumer", ef.Consumer, "match", ef.Match, "q", ef.Q,
		"since", ef.Since, "until", ef.Until}, kv...)...)
}

func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	ef := eventForm(q)
	consumers, err := c.ctl.Consumers(r.Context(), s.caller())
	if err != nil {
		return err
	}
	f, err := ef.filter()
	var page intake.Page[intake.Event]
	if err == nil {
		f.Limit, f.Cursor = pageSize, q.Get("cursor")
		page, err = c.ctl.Events(r.Context(), s.caller(), f)
	}
	status := http.StatusOK
	v := eventPage(page, ef, f.Cursor)
	if intake.ErrorCode(err) == intake.EINVALID {
		// The page again, with the form as written and why it failed.
		status, v.Error = http.StatusBadRequest, intake.ErrorMessage(err)
	} else if err != nil {
		return err
	}
	for _, ev := range v.Items {
		v.Reroutable = v.Reroutable || ef.Searching() && intake.CheckEventTransition(ev.State, intake.EventPending) == nil
	}
	for _, cons := range consumers {
		v.Consumers = append(v.Consumers, option{Value: cons.ID, Label: cons.Name + " (" + cons.App + ")"})
	}
	c.render(w, r, s, status, "events", "Events", v)
	return nil
}

// rerouteEvents re-routes every re-routable event the page's search
// selects, through the admin API's bulk re-route, each audited with the
// search.
func (c *Console) rerouteEvents(w http.ResponseWriter, r *http.Request, s *session) error {
	ef := eventForm(r.PostForm)
	ef.Consumer = "" // a re-route selects by the search alone
	f, err := ef.filter()
	if err != nil {
		return err
	}
	res, err := c.ctl.RerouteWhere(r.Context(), s.caller(), f, confirmed(r))
	if err != nil || res.Job != nil {
		return jobOr(w, r, res, err)
	}
	return redirect(w, r, "/console/events"+ef.query("flash", "rerouted-search", "n", strconv.Itoa(res.Count)))
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
		v.Next = ef.query("cursor", page.NextCursor)
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
	// Waiting: a route waits for a later attempt or is held, so a retry
	// now can hurry it.
	Waiting bool
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
	for _, rt := range d.Routes {
		v.Waiting = v.Waiting || rt.State == intake.RouteWaiting
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

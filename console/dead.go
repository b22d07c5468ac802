package console

import (
	"net/http"
	"strconv"

	"github.com/intakehq/intake"
)

// deadView is the dead-letters page: dead messages and dead events, each
// filtered, with bulk replay and re-route of what the filters select.
type deadView struct {
	Messages     []messageRow
	MessageCount int
	MessagesNext string
	Events       []deadEvent
	EventsNext   string
	Endpoints    []option
	Filter       deadFilter
}

// deadEvent is a dead event with the consumers whose attempts it spent,
// each with its last error.
type deadEvent struct {
	intake.Event
	Routes []routeRow
}

type deadFilter struct {
	Endpoint, Since, Until, Type string
}

func (c *Console) deadFilters(r *http.Request) (deadFilter, intake.MessageFilter, intake.EventFilter, error) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	df := deadFilter{Endpoint: q.Get("endpoint"), Since: q.Get("since"), Until: q.Get("until"), Type: q.Get("type")}
	mf, err := messageFilter{Endpoint: df.Endpoint, State: string(intake.MessageDead), Since: df.Since, Until: df.Until}.parse()
	if err != nil {
		return df, mf, intake.EventFilter{}, err
	}
	ef := intake.EventFilter{Type: df.Type, State: intake.EventDead, Since: mf.Since, Until: mf.Until}
	return df, mf, ef, nil
}

func (c *Console) dead(w http.ResponseWriter, r *http.Request, s *session) error {
	df, mf, ef, err := c.deadFilters(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ctx := r.Context()
	mf.Limit, mf.Cursor = pageSize, q.Get("mcursor")
	ef.Limit, ef.Cursor = pageSize, q.Get("ecursor")
	names, endpoints, err := c.endpointNames(ctx, s)
	if err != nil {
		return err
	}
	v := deadView{Endpoints: endpoints, Filter: df}
	if v.MessageCount, err = c.ctl.CountMessages(ctx, s.caller(), mf); err != nil {
		return err
	}
	msgs, err := c.ctl.Messages(ctx, s.caller(), mf)
	if err != nil {
		return err
	}
	for _, m := range msgs.Items {
		v.Messages = append(v.Messages, messageRow{Message: m, Endpoint: names[m.EndpointID]})
	}
	events, err := c.ctl.Events(ctx, s.caller(), ef)
	if err != nil {
		return err
	}
	ids := make([]string, len(events.Items))
	for i, ev := range events.Items {
		ids[i] = ev.ID
	}
	routes, err := c.ctl.EventRoutes(ctx, s.caller(), ids)
	if err != nil {
		return err
	}
	for _, ev := range events.Items {
		var dead []routeRow
		for _, rt := range routes[ev.ID] {
			if rt.State == intake.RouteDead {
				dead = append(dead, rt)
			}
		}
		v.Events = append(v.Events, deadEvent{Event: ev, Routes: dead})
	}
	keep := []string{"endpoint", df.Endpoint, "since", df.Since, "until", df.Until, "type", df.Type}
	if msgs.NextCursor != "" {
		v.MessagesNext = queryString(append(keep, "mcursor", msgs.NextCursor)...)
	}
	if events.NextCursor != "" {
		v.EventsNext = queryString(append(keep, "ecursor", events.NextCursor)...)
	}
	c.render(w, r, s, http.StatusOK, "dead", "Dead letters", v)
	return nil
}

// replayDead replays every dead message the filters select (up to the
// bulk maximum a click). A message whose body expired is left out: its
// replay would only be dead again.
func (c *Console) replayDead(w http.ResponseWriter, r *http.Request, s *session) error {
	df, mf, _, err := c.deadFilters(r)
	if err != nil {
		return err
	}
	n, err := c.ctl.ReplayDead(r.Context(), s.caller(), mf)
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/dead"+queryString("endpoint", df.Endpoint, "since", df.Since, "until", df.Until,
		"type", df.Type, "flash", "replayed-dead", "n", strconv.Itoa(n)))
}

// rerouteDead re-routes every dead event the filters select, through the
// same operation as the admin API's bulk re-route.
func (c *Console) rerouteDead(w http.ResponseWriter, r *http.Request, s *session) error {
	df, _, ef, err := c.deadFilters(r)
	if err != nil {
		return err
	}
	res, err := c.ctl.RerouteWhere(r.Context(), s.caller(), ef, confirmed(r))
	if err != nil || res.Job != nil {
		return jobOr(w, r, res, err)
	}
	return redirect(w, r, "/console/dead"+queryString("endpoint", df.Endpoint, "since", df.Since, "until", df.Until,
		"type", df.Type, "flash", "rerouted-dead", "n", strconv.Itoa(res.Count)))
}

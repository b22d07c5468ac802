package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	sc := who.Scope
	q := r.URL.Query()
	f := intake.EventFilter{State: intake.EventState(q.Get("state")), Type: q.Get("type"), ConsumerID: q.Get("consumer_id")}
	if f.ConsumerID != "" {
		if err := intake.CheckID("consumer_id", f.ConsumerID); err != nil {
			return err
		}
	}
	if f.State != "" && !f.State.Valid() {
		return intake.Errorf(intake.EINVALID, "state must be one of %s", joinStates(intake.EventStates))
	}
	if len(f.Type) > 200 {
		return intake.Errorf(intake.EINVALID, "type must be at most 200 bytes")
	}
	var err error
	if f.Limit, f.Cursor, err = pageParams(r); err != nil {
		return err
	}
	return s.writeEvents(w, r, sc, f)
}

// listUnclaimed lists the events no consumer wanted, across every org, so
// staff can see which integrations nobody subscribes to yet.
func (s *Server) listUnclaimed(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := who.RequireStaff(); err != nil {
		return err
	}
	f := intake.EventFilter{State: intake.EventNoConsumer}
	var err error
	if f.Limit, f.Cursor, err = pageParams(r); err != nil {
		return err
	}
	return s.writeEvents(w, r, intake.Scope{}, f)
}

func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, sc intake.Scope, f intake.EventFilter) error {
	page, err := s.store.ListEvents(r.Context(), sc, f)
	if err != nil {
		return err
	}
	out := List[Event]{Items: make([]Event, 0, len(page.Items)), NextCursor: page.NextCursor}
	var dead []string
	for _, e := range page.Items {
		out.Items = append(out.Items, eventView(e))
		if e.State == intake.EventDead {
			dead = append(dead, e.ID)
		}
	}
	if len(dead) > 0 {
		// A dead event names the consumers whose attempts it spent, and why.
		routes, err := s.eventRoutes(r, sc, dead)
		if err != nil {
			return err
		}
		for i := range out.Items {
			for _, rt := range routes[out.Items[i].ID] {
				if rt.State == string(intake.RouteDead) {
					out.Items[i].DeadRoutes = append(out.Items[i].DeadRoutes, rt)
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// consumersByID are the consumers visible in sc, for their names and
// retry limits.
func (s *Server) consumersByID(r *http.Request, sc intake.Scope) (map[string]intake.Consumer, error) {
	cs, err := s.store.ListConsumers(r.Context(), sc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]intake.Consumer, len(cs))
	for _, c := range cs {
		out[c.ID] = c
	}
	return out, nil
}

// eventRoutes reads the events' routes, by event, with their consumers'
// names and retry limits.
func (s *Server) eventRoutes(r *http.Request, sc intake.Scope, eventIDs []string) (map[string][]EventRoute, error) {
	rs, err := s.store.EventRoutes(r.Context(), sc, eventIDs)
	if err != nil {
		return nil, err
	}
	consumers, err := s.consumersByID(r, sc)
	if err != nil {
		return nil, err
	}
	out := map[string][]EventRoute{}
	for _, rt := range rs {
		out[rt.EventID] = append(out[rt.EventID], routeView(rt, consumers))
	}
	return out, nil
}

func routeView(rt intake.Route, consumers map[string]intake.Consumer) EventRoute {
	v := EventRoute{ConsumerID: rt.ConsumerID, State: string(rt.State), Attempt: rt.Attempt, LastError: rt.LastError}
	if c, ok := consumers[rt.ConsumerID]; ok {
		v.ConsumerName, v.MaxAttempts = c.Name, c.Controls.Attempts()
	}
	return v
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	sc := who.Scope
	id, err := pathID(r)
	if err != nil {
		return err
	}
	e, err := s.store.Event(r.Context(), sc, id)
	if err != nil {
		return err
	}
	ds, err := s.store.Deliveries(r.Context(), sc, e.ID)
	if err != nil {
		return err
	}
	consumers, err := s.consumersByID(r, sc)
	if err != nil {
		return err
	}
	rs, err := s.store.EventRoutes(r.Context(), sc, []string{e.ID})
	if err != nil {
		return err
	}
	out := EventDetail{Event: eventView(e), Routes: make([]EventRoute, 0, len(rs)), Deliveries: make([]Delivery, 0, len(ds))}
	for _, rt := range rs {
		out.Routes = append(out.Routes, routeView(rt, consumers))
	}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryView(d, consumers))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func eventView(e intake.Event) Event {
	return Event{
		ID:              e.ID,
		OrgID:           e.OrgID,
		Type:            e.Type,
		Kind:            string(e.Kind),
		State:           string(e.State),
		Attempt:         e.Attempt,
		MaxAttempts:     e.MaxAttempts,
		MessageID:       e.MessageID,
		ConnectionID:    e.ConnectionID,
		Provider:        e.Provider,
		ProviderEventID: e.ProviderEventID,
		OccurredAt:      e.OccurredAt.UTC(),
		ReceivedAt:      e.ReceivedAt.UTC(),
		Subject:         e.Subject,
		Data:            e.Data,
		DataTruncated:   e.DataTruncated,
		Replay:          e.Replay,
		ReplayOf:        e.ReplayOf,
	}
}

func deliveryView(d intake.Delivery, consumers map[string]intake.Consumer) Delivery {
	c, ok := consumers[d.ConsumerID]
	v := Delivery{
		ConsumerID: d.ConsumerID,
		Attempt:    d.Attempt,
		Outcome:    d.Outcome,
		StatusCode: d.StatusCode,
		LatencyMS:  float64(d.Latency.Microseconds()) / float64(time.Millisecond/time.Microsecond),
		Error:      d.Error,
		At:         d.At.UTC(),
	}
	if ok {
		v.ConsumerName, v.MaxAttempts = c.Name, c.Controls.Attempts()
	}
	return v
}

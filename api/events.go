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
	for _, e := range page.Items {
		out.Items = append(out.Items, eventView(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
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
	out := EventDetail{Event: eventView(e), Deliveries: make([]Delivery, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryView(d))
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

func deliveryView(d intake.Delivery) Delivery {
	return Delivery{
		ConsumerID: d.ConsumerID,
		Attempt:    d.Attempt,
		Outcome:    d.Outcome,
		StatusCode: d.StatusCode,
		LatencyMS:  float64(d.Latency.Microseconds()) / float64(time.Millisecond/time.Microsecond),
		Error:      d.Error,
		At:         d.At.UTC(),
	}
}

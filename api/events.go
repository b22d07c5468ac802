package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// listEvents lists (and searches) events: the query is control's to read.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	f, err := control.EventQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.ctl.Events(r.Context(), who, f)
	if err != nil {
		return err
	}
	return s.writeEvents(w, r, who, page)
}

// listUnclaimed lists the events no consumer wanted, across every org, so
// staff can see which integrations nobody subscribes to yet.
func (s *Server) listUnclaimed(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "limit", "cursor"); err != nil {
		return err
	}
	limit, err := control.ParseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		return err
	}
	page, err := s.ctl.Unclaimed(r.Context(), who, limit, r.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	return s.writeEvents(w, r, who, page)
}

func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, who control.Caller, page intake.Page[intake.Event]) error {
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
		routes, err := s.ctl.EventRoutes(r.Context(), who, dead)
		if err != nil {
			return err
		}
		for i := range out.Items {
			for _, rt := range routes[out.Items[i].ID] {
				if rt.State == intake.RouteDead {
					out.Items[i].DeadRoutes = append(out.Items[i].DeadRoutes, routeView(rt))
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func routeView(rt control.NamedRoute) EventRoute {
	return EventRoute{ConsumerID: rt.ConsumerID, ConsumerName: rt.Consumer, State: string(rt.State), Attempt: rt.Attempt,
		MaxAttempts: rt.MaxAttempts, LastError: rt.LastError}
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	d, err := s.ctl.EventDetail(r.Context(), who, id)
	if err != nil {
		return err
	}
	out := EventDetail{Event: eventView(d.Event), Routes: make([]EventRoute, 0, len(d.Routes)), Deliveries: make([]Delivery, 0, len(d.Deliveries))}
	for _, rt := range d.Routes {
		out.Routes = append(out.Routes, routeView(rt))
	}
	for _, d := range d.Deliveries {
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

func deliveryView(d control.NamedDelivery) Delivery {
	return Delivery{
		ConsumerID:   d.ConsumerID,
		ConsumerName: d.Consumer,
		Attempt:      d.Attempt,
		MaxAttempts:  d.MaxAttempts,
		Outcome:      d.Outcome,
		StatusCode:   d.StatusCode,
		LatencyMS:    float64(d.Latency.Microseconds()) / float64(time.Millisecond/time.Microsecond),
		Error:        d.Error,
		At:           d.At.UTC(),
		Response:     responseView(d.Response),
	}
}

func responseView(r *intake.DeliveryResponse) *DeliveryResponse {
	if r == nil {
		return nil
	}
	headers := r.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	return &DeliveryResponse{Status: r.Status, Headers: headers, Body: r.Body, BodyEncoding: r.BodyEncoding, BodyTruncated: r.BodyTruncated}
}

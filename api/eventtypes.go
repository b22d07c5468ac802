package api

import (
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "connection_id"); err != nil {
		return err
	}
	ts, err := s.ctl.EventTypes(r.Context(), who, r.URL.Query().Get("connection_id"))
	if err != nil {
		return err
	}
	out := List[EventType]{Items: make([]EventType, 0, len(ts))}
	for _, t := range ts {
		out.Items = append(out.Items, eventTypeView(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getEventType(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "connection_id"); err != nil {
		return err
	}
	d, err := s.ctl.EventType(r.Context(), who, r.URL.Query().Get("connection_id"), r.PathValue("type"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, EventTypeDetailView(d))
	return nil
}

func eventTypeView(t intake.EventType) EventType {
	return EventType{Type: t.Type, ConnectionID: t.ConnectionID, ConnectionName: t.ConnectionName, FirstSeenAt: t.FirstSeenAt,
		LastSeenAt: t.LastSeenAt, Count24h: t.Count24h, Total: t.Total}
}

// EventTypeDetailView is an event type's detail on the wire.
func EventTypeDetailView(d intake.EventTypeDetail) EventTypeDetail {
	out := EventTypeDetail{EventType: eventTypeView(d.EventType), Schema: d.Schema,
		Days: make([]EventTypeDay, 0, len(d.Days)), Changes: make([]EventTypeChange, 0, len(d.Changes))}
	if d.ExampleEventID != "" {
		out.Example = &EventTypeExample{EventID: d.ExampleEventID, Data: d.Example}
	}
	for _, day := range d.Days {
		out.Days = append(out.Days, EventTypeDay{Day: day.Day.UTC().Format("2006-01-02"), Count: day.Count})
	}
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, EventTypeChange{At: c.At, Path: c.Path, Change: c.Change, From: c.From, To: c.To,
			ExampleEventID: c.ExampleEventID})
	}
	return out
}

func (s *Server) getAsyncAPI(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query(), "org_id", "connection_id"); err != nil {
		return err
	}
	doc, err := s.ctl.AsyncAPIDocument(r.Context(), who, r.URL.Query().Get("org_id"), r.URL.Query().Get("connection_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// replayMessage makes a new message from a stored one (DESIGN §2.8).
func (s *Server) replayMessage(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := s.ctl.ReplayMessage(r.Context(), who, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ReplayedMessage{ID: m.ID, ReplayOf: m.ReplayOf, State: string(m.State)})
	return nil
}

// ReplayedMessage is the answer to a message's replay: the new message.
type ReplayedMessage struct {
	ID       string `json:"id"`
	ReplayOf string `json:"replay_of"`
	State    string `json:"state"`
}

// ReplayWindowRequest is the body of POST /api/v1/endpoints/{id}/replay;
// with dry_run nothing is replayed and the answer is what would be.
type ReplayWindowRequest struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	DryRun bool      `json:"dry_run,omitempty"`
}

// replayWindow records a replay of an endpoint's window, which a replay
// runner of any process carries out in the background.
func (s *Server) replayWindow(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req ReplayWindowRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.DryRun {
		pv, err := s.ctl.PreviewReplayWindow(r.Context(), who, id, req.Since, req.Until)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, messagesPreview(pv))
		return nil
	}
	job, err := s.ctl.ReplayWindow(r.Context(), who, id, req.Since, req.Until)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, ReplayStarted{Count: job.Total, ReplayID: job.ID})
	return nil
}

// ReplayStarted is the answer to a window replay: how many messages it
// will replay, and the job to follow at GET /api/v1/replays/{id}.
type ReplayStarted struct {
	Count    int    `json:"count"`
	ReplayID string `json:"replay_id"`
}

// getReplay reports a window replay's or bulk job's progress, whichever
// process runs it.
func (s *Server) getReplay(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	job, err := s.ctl.ReplayJob(r.Context(), who, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, replayView(job))
	return nil
}

// rerouteEvent takes a dead or no_consumer event back to pending.
func (s *Server) rerouteEvent(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.ctl.Reroute(r.Context(), who, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Rerouted{ID: id, State: string(intake.EventPending)})
	return nil
}

// Rerouted is the answer to an event's re-route: its new state.
type Rerouted struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// Count is the answer to an action on many rows: how many it took.
type Count struct {
	Count int `json:"count"`
}

// Bulk is the answer to a bulk action: how many rows it took, or on a dry
// run would take, and then (dry run only) the first of them. A dry run
// changes nothing.
type Bulk[T any] struct {
	Count int `json:"count"`
	Items []T `json:"items,omitempty"`
}

func eventsPreview(pv control.Preview[intake.Event]) Bulk[Event] {
	out := Bulk[Event]{Count: pv.Count, Items: make([]Event, 0, len(pv.Items))}
	for _, e := range pv.Items {
		out.Items = append(out.Items, eventView(e))
	}
	return out
}

func messagesPreview(pv control.Preview[intake.Message]) Bulk[Message] {
	out := Bulk[Message]{Count: pv.Count, Items: make([]Message, 0, len(pv.Items))}
	for _, m := range pv.Items {
		out.Items = append(out.Items, messageView(m))
	}
	return out
}

// RerouteRequest selects events for a bulk re-route: a search of events,
// as GET /api/v1/events takes it.
type RerouteRequest struct {
	State intake.EventState `json:"state"`
	Type  string            `json:"type"`
	Since time.Time         `json:"since"`
	Until time.Time         `json:"until"`
	// Match is a JSON object the events' data must contain.
	Match json.RawMessage `json:"match,omitempty"`
	// Q is words that must all occur in the events' data.
	Q string `json:"q,omitempty"`
	// DryRun re-routes nothing: the answer is what would be re-routed.
	DryRun bool `json:"dry_run,omitempty"`
	// Confirm lets a search select more events than the server's bulk
	// maximum: the re-route then runs as a paced job (202, followed at
	// GET /api/v1/replays/{id}).
	Confirm bool `json:"confirm,omitempty"`
}

// rerouteEvents re-routes every re-routable event a search selects.
func (s *Server) rerouteEvents(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req RerouteRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	search, err := control.ParseSearch(matchText(req.Match), req.Q)
	if err != nil {
		return err
	}
	f := intake.EventFilter{State: req.State, Type: req.Type, Since: req.Since, Until: req.Until, Search: search}
	if req.DryRun {
		pv, err := s.ctl.PreviewRerouteWhere(r.Context(), who, f)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, eventsPreview(pv))
		return nil
	}
	res, err := s.ctl.RerouteWhere(r.Context(), who, f, req.Confirm)
	if err != nil {
		return err
	}
	if res.Job != nil {
		writeJSON(w, http.StatusAccepted, replayView(*res.Job))
		return nil
	}
	writeJSON(w, http.StatusOK, Bulk[Event]{Count: res.Count})
	return nil
}

// ReplayRequest selects messages for a bulk replay: a search of messages,
// as GET /api/v1/messages takes it.
type ReplayRequest struct {
	EndpointID string              `json:"endpoint_id,omitempty"`
	State      intake.MessageState `json:"state,omitempty"`
	// Type selects the messages one of whose events has this type.
	Type string `json:"type,omitempty"`
	// Match is a JSON object one of the messages' events' data must
	// contain.
	Match json.RawMessage `json:"match,omitempty"`
	// Q is words that must all occur in the messages' raw bodies.
	Q     string    `json:"q,omitempty"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// DryRun replays nothing: the answer is what would be replayed.
	DryRun bool `json:"dry_run,omitempty"`
	// Confirm lets a search select more messages than the server's bulk
	// maximum: the replay then runs as a paced job (202, followed at
	// GET /api/v1/replays/{id}).
	Confirm bool `json:"confirm,omitempty"`
}

// replayMessages replays every original message a search selects, at most
// the bulk maximum; a search that selects more is refused whole, or with
// confirm becomes a job.
func (s *Server) replayMessages(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req ReplayRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	search, err := control.ParseSearch(matchText(req.Match), req.Q)
	if err != nil {
		return err
	}
	f := intake.MessageFilter{EndpointID: req.EndpointID, State: req.State, Type: req.Type, Since: req.Since, Until: req.Until, Search: search}
	if req.DryRun {
		pv, err := s.ctl.PreviewReplayWhere(r.Context(), who, f)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, messagesPreview(pv))
		return nil
	}
	res, err := s.ctl.ReplayWhere(r.Context(), who, f, req.Confirm)
	if err != nil {
		return err
	}
	if res.Job != nil {
		writeJSON(w, http.StatusAccepted, replayView(*res.Job))
		return nil
	}
	writeJSON(w, http.StatusOK, Bulk[Message]{Count: res.Count})
	return nil
}

// matchText is a request's match as control reads it: null is none.
func matchText(m json.RawMessage) string {
	if t := strings.TrimSpace(string(m)); t != "null" {
		return t
	}
	return ""
}

// eraseBodies deletes an endpoint's stored payloads in a time range on the
// org's request; the messages and their deduplication keys stay.
func (s *Server) eraseBodies(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	since, until, err := timeRange(r)
	if err != nil {
		return err
	}
	n, err := s.ctl.EraseBodies(r.Context(), who, id, since, until)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Count{Count: n})
	return nil
}

// timeRange reads the since and until query parameters (RFC 3339).
func timeRange(r *http.Request) (since, until time.Time, err error) {
	q := r.URL.Query()
	if err := control.CheckParams(q, "since", "until"); err != nil {
		return since, until, err
	}
	for _, p := range []struct {
		name string
		into *time.Time
	}{{"since", &since}, {"until", &until}} {
		v := q.Get(p.name)
		if v == "" {
			return since, until, intake.Errorf(intake.EINVALID, "%s is required (RFC 3339)", p.name)
		}
		if *p.into, err = control.ParseTime(p.name, v); err != nil {
			return since, until, err
		}
	}
	return since, until, nil
}

// deleteHandler soft-deletes one kind of row: it disappears from every
// read, its history stays.
func (s *Server) deleteHandler(kind intake.DeleteKind) apiFunc {
	return func(w http.ResponseWriter, r *http.Request, who control.Caller) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if err := s.ctl.Delete(r.Context(), who, kind, id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

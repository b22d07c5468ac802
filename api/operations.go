package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/intakehq/intake"
)

// replayMessage makes a new message from a stored one (DESIGN §2.8).
func (s *Server) replayMessage(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	m, err := s.ops.ReplayMessage(r.Context(), sc, id)
	if err != nil {
		return err
	}
	s.audit(r, m.OrgID, "message.replay", "message", id, "replay=", m.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"id": m.ID, "replay_of": m.ReplayOf, "state": m.State})
	return nil
}

// ReplayWindowRequest is the body of POST /api/v1/endpoints/{id}/replay.
type ReplayWindowRequest struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// replayWindow records a replay of an endpoint's window, which a replay
// runner of any process carries out in the background.
func (s *Server) replayWindow(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req ReplayWindowRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	job, err := s.ops.ReplayWindow(r.Context(), sc, id, req.Since, req.Until)
	if err != nil {
		return err
	}
	s.audit(r, job.OrgID, "endpoint.replay", "endpoint", id, fmt.Sprintf("since=%s until=%s count=%d",
		req.Since.UTC().Format(time.RFC3339), req.Until.UTC().Format(time.RFC3339), job.Total))
	writeJSON(w, http.StatusAccepted, map[string]any{"count": job.Total, "replay_id": job.ID})
	return nil
}

// getReplay reports a window replay's progress, whichever process runs it.
func (s *Server) getReplay(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	job, err := s.ops.Job(r.Context(), sc, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Replay{ID: job.ID, EndpointID: job.EndpointID, Since: job.Since.UTC(), Until: job.Until.UTC(),
		Total: job.Total, Done: job.Done, Finished: job.Finished(), Error: job.Error, UpdatedAt: job.UpdatedAt.UTC()})
	return nil
}

// rerouteEvent takes a dead or no_consumer event back to pending.
func (s *Server) rerouteEvent(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.ops.Reroute(r.Context(), sc, id); err != nil {
		return err
	}
	if ev, err := s.store.Event(r.Context(), sc, id); err == nil {
		s.audit(r, ev.OrgID, "event.reroute", "event", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": intake.EventPending})
	return nil
}

// RerouteRequest selects events for a bulk re-route.
type RerouteRequest struct {
	State intake.EventState `json:"state"`
	Type  string            `json:"type"`
	Since time.Time         `json:"since"`
	Until time.Time         `json:"until"`
}

// rerouteEvents re-routes every dead or no_consumer event a filter selects.
func (s *Server) rerouteEvents(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req RerouteRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	n, err := s.ops.RerouteWhere(r.Context(), sc, intake.EventFilter{State: req.State, Type: req.Type, Since: req.Since, Until: req.Until})
	if err != nil {
		return err
	}
	s.audit(r, sc.OrgID, "events.reroute", "events", "", fmt.Sprintf("state=%s type=%s count=%d", req.State, req.Type, n))
	writeJSON(w, http.StatusOK, map[string]any{"count": n})
	return nil
}

// eraseBodies deletes an endpoint's stored payloads in a time range on the
// org's request; the messages and their deduplication keys stay.
func (s *Server) eraseBodies(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	since, until, err := timeRange(r)
	if err != nil {
		return err
	}
	ep, err := s.store.Endpoint(r.Context(), sc, id)
	if err != nil {
		return err
	}
	n, err := s.store.EraseBodies(r.Context(), sc, id, since, until)
	if err != nil {
		return err
	}
	s.audit(r, ep.OrgID, "endpoint.erase", "endpoint", id, fmt.Sprintf("since=%s until=%s count=%d",
		since.Format(time.RFC3339), until.Format(time.RFC3339), n))
	writeJSON(w, http.StatusOK, map[string]any{"count": n})
	return nil
}

// timeRange reads the since and until query parameters (RFC 3339).
func timeRange(r *http.Request) (since, until time.Time, err error) {
	q := r.URL.Query()
	for _, p := range []struct {
		name string
		into *time.Time
	}{{"since", &since}, {"until", &until}} {
		v := q.Get(p.name)
		if v == "" {
			return since, until, intake.Errorf(intake.EINVALID, "%s is required (RFC 3339)", p.name)
		}
		if *p.into, err = time.Parse(time.RFC3339, v); err != nil {
			return since, until, intake.Errorf(intake.EINVALID, "%s must be an RFC 3339 time", p.name)
		}
	}
	if !since.Before(until) {
		return since, until, intake.Errorf(intake.EINVALID, "since must be before until")
	}
	return since, until, nil
}

// deleteHandler soft-deletes one kind of row: it disappears from every
// read, its history stays.
func (s *Server) deleteHandler(kind intake.DeleteKind, orgOf func(r *http.Request, sc intake.Scope, id string) (string, error)) apiFunc {
	return func(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		org, err := orgOf(r, sc, id)
		if err != nil {
			return err
		}
		if err := s.store.Delete(r.Context(), sc, kind, id, s.clock.Now().UTC()); err != nil {
			return err
		}
		s.audit(r, org, string(kind)+".delete", string(kind), id)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateEndpointRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	e, err := s.ctl.CreateEndpoint(r.Context(), who, req.ConnectionID,
		control.Limits{Name: req.Name, MaxBodyBytes: req.MaxBodyBytes, RatePerSec: req.RatePerSec, Burst: req.Burst})
	if err != nil {
		return err
	}
	out := endpointView(e.Endpoint)
	out.Token = e.Token
	out.URL = e.URL
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) updateEndpoint(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateEndpointRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	version, err := ifMatch(r)
	if err != nil {
		return err
	}
	e, err := s.ctl.UpdateEndpoint(r.Context(), who, id, control.Limits{Name: req.Name, Enabled: req.Enabled, MaxBodyBytes: req.MaxBodyBytes,
		RatePerSec: req.RatePerSec, Burst: req.Burst, Version: version})
	if err != nil {
		return err
	}
	setETag(w, e.Version)
	writeJSON(w, http.StatusOK, endpointView(e))
	return nil
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query()); err != nil {
		return err
	}
	eps, err := s.ctl.Endpoints(r.Context(), who)
	if err != nil {
		return err
	}
	out := List[Endpoint]{Items: make([]Endpoint, 0, len(eps))}
	for _, e := range eps {
		out.Items = append(out.Items, endpointView(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	e, err := s.ctl.Endpoint(r.Context(), who, id)
	if err != nil {
		return err
	}
	setETag(w, e.Version)
	writeJSON(w, http.StatusOK, endpointView(e))
	return nil
}

// RotateEndpointRequest asks for an endpoint's new token; the current one
// keeps working beside it for overlap ("24h" when absent, "0s" to stop it
// at once, at most "168h").
type RotateEndpointRequest struct {
	Overlap string `json:"overlap,omitempty"`
}

// RotatedEndpoint is an endpoint's new token and URL, shown once, and when
// the token it replaced stops working.
type RotatedEndpoint struct {
	ID                string    `json:"id"`
	Token             string    `json:"token"`
	URL               string    `json:"url"`
	PreviousExpiresAt time.Time `json:"previous_expires_at"`
}

func (s *Server) rotateEndpoint(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req RotateEndpointRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	var overlap *time.Duration
	if req.Overlap != "" {
		d, err := control.ParseDuration("overlap", req.Overlap, "24h")
		if err != nil {
			return err
		}
		overlap = &d
	}
	e, err := s.ctl.RotateEndpoint(r.Context(), who, id, overlap)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, RotatedEndpoint{ID: e.ID, Token: e.Token, URL: e.URL, PreviousExpiresAt: e.PreviousExpiresAt.UTC()})
	return nil
}

// endpointView shows an endpoint without its token, which only the answer
// that created it carries.
func endpointView(e intake.Endpoint) Endpoint {
	return Endpoint{
		ID:           e.ID,
		OrgID:        e.OrgID,
		ConnectionID: e.ConnectionID,
		Name:         e.Name,
		Provider:     e.Provider,
		Enabled:      e.Enabled,
		MaxBodyBytes: e.MaxBodyBytes,
		RatePerSec:   e.RatePerSec,
		Burst:        e.Burst,
		CreatedAt:    e.CreatedAt.UTC(),
	}
}

package api

import (
	"fmt"
	"net/http"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/token"
)

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req CreateEndpointRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.ConnectionID == "" {
		return intake.Errorf(intake.EINVALID, "connection_id is required")
	}
	if err := checkID("connection_id", req.ConnectionID); err != nil {
		return err
	}
	c, err := s.store.Connection(r.Context(), sc, req.ConnectionID)
	if err != nil {
		return err
	}
	tok := token.New("")
	e := intake.Endpoint{
		ID:           intake.NewID(),
		OrgID:        c.OrgID,
		ConnectionID: c.ID,
		Provider:     c.Provider,
		TokenHash:    token.Hash(tok),
		Enabled:      true,
		MaxBodyBytes: intake.DefaultMaxBodyBytes,
		RatePerSec:   intake.DefaultRatePerSec,
		Burst:        intake.DefaultBurst,
		CreatedAt:    s.clock.Now().UTC(),
	}
	if err := applyLimits(&e, req.MaxBodyBytes, req.RatePerSec, req.Burst); err != nil {
		return err
	}
	e.SealedToken = s.sealer.Seal([]byte(tok), []byte(e.ID))
	if err := s.store.CreateEndpoint(r.Context(), e); err != nil {
		return err
	}
	s.audit(r, e.OrgID, "endpoint.create", "endpoint", e.ID, "connection=", e.ConnectionID)
	out := endpointView(e)
	out.Token = tok
	out.URL = s.publicURL + "/webhooks/" + tok
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) updateEndpoint(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateEndpointRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	e, err := s.store.Endpoint(r.Context(), sc, id)
	if err != nil {
		return err
	}
	if req.Enabled != nil {
		e.Enabled = *req.Enabled
	}
	if err := applyLimits(&e, req.MaxBodyBytes, req.RatePerSec, req.Burst); err != nil {
		return err
	}
	if err := s.store.UpdateEndpoint(r.Context(), sc, e); err != nil {
		return err
	}
	s.audit(r, e.OrgID, "endpoint.update", "endpoint", e.ID,
		fmt.Sprintf("enabled=%v max_body_bytes=%d rate_per_sec=%g burst=%d", e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst))
	writeJSON(w, http.StatusOK, endpointView(e))
	return nil
}

// applyLimits sets the limits a request gives and validates the result.
func applyLimits(e *intake.Endpoint, maxBody *int64, rate *float64, burst *int) error {
	if maxBody != nil {
		e.MaxBodyBytes = *maxBody
	}
	if rate != nil {
		e.RatePerSec = *rate
	}
	if burst != nil {
		if *burst < 0 {
			return intake.Errorf(intake.EINVALID, "burst must not be negative")
		}
		e.Burst = *burst
	}
	return e.Validate()
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	eps, err := s.store.ListEndpoints(r.Context(), sc)
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

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	e, err := s.store.Endpoint(r.Context(), sc, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, endpointView(e))
	return nil
}

// endpointView shows an endpoint without its token, which only the answer
// that created it carries.
func endpointView(e intake.Endpoint) Endpoint {
	return Endpoint{
		ID:           e.ID,
		OrgID:        e.OrgID,
		ConnectionID: e.ConnectionID,
		Provider:     e.Provider,
		Enabled:      e.Enabled,
		MaxBodyBytes: e.MaxBodyBytes,
		RatePerSec:   e.RatePerSec,
		Burst:        e.Burst,
		CreatedAt:    e.CreatedAt.UTC(),
	}
}

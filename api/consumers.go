package api

import (
	"context"
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// Consumer limits: room for any real subscription, small enough to refuse
// a paste of the wrong thing.
const (
	maxEventTypes  = 100
	maxPatternLen  = 200
	maxConsumerURL = 2048
	resolveTimeout = 5 * time.Second
)

func (s *Server) createConsumer(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	var req CreateConsumerRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := intake.CheckName("name", req.Name); err != nil {
		return err
	}
	if err := intake.CheckName("app", req.App); err != nil {
		return err
	}
	if err := checkEventTypes(req.EventTypes); err != nil {
		return err
	}
	if req.URL == "" {
		return intake.Errorf(intake.EINVALID, "url is required")
	}
	if len(req.URL) > maxConsumerURL {
		return intake.Errorf(intake.EINVALID, "url must be at most %d bytes", maxConsumerURL)
	}
	orgID, err := orgFor(sc, req.OrgID)
	if err != nil {
		return err
	}
	// Resolving the host is the slowest check, so it comes last, and a
	// resolver that does not answer cannot hold the request.
	ctx, cancel := context.WithTimeout(r.Context(), resolveTimeout)
	err = s.consumerPolicy.CheckURL(ctx, req.URL)
	cancel()
	if err != nil {
		return intake.Errorf(intake.EINVALID, "%v", err)
	}
	c := intake.Consumer{
		// The id is made first because the sealed secret is bound to it.
		ID:         intake.NewID(),
		OrgID:      orgID,
		Name:       req.Name,
		App:        req.App,
		URL:        req.URL,
		EventTypes: req.EventTypes,
		Completion: req.Completion,
		Enabled:    true,
		CreatedAt:  s.clock.Now().UTC(),
	}
	secret := delivery.NewSecret()
	c.SealedSecret = s.sealer.Seal([]byte(secret), []byte(c.ID))
	if err := s.store.CreateConsumer(r.Context(), c); err != nil {
		return err
	}
	s.audit(r, c.OrgID, "consumer.create", "consumer", c.ID, "url=", c.URL)
	out := consumerView(c)
	out.SigningSecret = secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// checkEventTypes requires at least one pattern and every one well formed.
func checkEventTypes(patterns []string) error {
	if len(patterns) == 0 {
		return intake.Errorf(intake.EINVALID, "event_types needs at least one pattern (e.g. stripe.invoice.paid, stripe.invoice.*, *)")
	}
	if len(patterns) > maxEventTypes {
		return intake.Errorf(intake.EINVALID, "event_types may hold at most %d patterns", maxEventTypes)
	}
	for i, p := range patterns {
		if len(p) > maxPatternLen {
			return intake.Errorf(intake.EINVALID, "event_types[%d] is longer than %d bytes", i, maxPatternLen)
		}
		if err := intake.ValidatePattern(p); err != nil {
			return intake.Errorf(intake.EINVALID, "event_types[%d]: %s", i, intake.ErrorMessage(err))
		}
	}
	return nil
}

func (s *Server) updateConsumer(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateConsumerRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return intake.Errorf(intake.EINVALID, "enabled is required")
	}
	if err := s.store.SetConsumerEnabled(r.Context(), sc, id, *req.Enabled); err != nil {
		return err
	}
	c, err := s.store.Consumer(r.Context(), sc, id)
	if err != nil {
		return err
	}
	s.audit(r, c.OrgID, "consumer.update", "consumer", c.ID, "enabled=", c.Enabled)
	writeJSON(w, http.StatusOK, consumerView(c))
	return nil
}

func (s *Server) listConsumers(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	cs, err := s.store.ListConsumers(r.Context(), sc)
	if err != nil {
		return err
	}
	out := List[Consumer]{Items: make([]Consumer, 0, len(cs))}
	for _, c := range cs {
		out.Items = append(out.Items, consumerView(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getConsumer(w http.ResponseWriter, r *http.Request, sc intake.Scope) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.store.Consumer(r.Context(), sc, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, consumerView(c))
	return nil
}

// consumerView shows a consumer without its secret, which only the answer
// that created it carries.
func consumerView(c intake.Consumer) Consumer {
	types := c.EventTypes
	if types == nil {
		types = []string{}
	}
	return Consumer{
		ID:         c.ID,
		OrgID:      c.OrgID,
		Name:       c.Name,
		App:        c.App,
		URL:        c.URL,
		EventTypes: types,
		Completion: c.Completion,
		Enabled:    c.Enabled,
		CreatedAt:  c.CreatedAt.UTC(),
	}
}

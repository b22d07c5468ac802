package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) createConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	var req CreateConsumerRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, secret, err := s.ctl.CreateConsumer(r.Context(), who, control.NewConsumer{OrgID: req.OrgID, Name: req.Name, App: req.App,
		URL: req.URL, EventTypes: req.EventTypes, Completion: req.Completion, Filter: req.Filter, Transform: req.Transform})
	if err != nil {
		return err
	}
	out := consumerView(c)
	out.SigningSecret = secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) updateConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req UpdateConsumerRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.ctl.UpdateConsumer(r.Context(), who, id, control.ConsumerUpdate{Name: req.Name, URL: req.URL,
		EventTypes: req.EventTypes, Completion: req.Completion, Enabled: req.Enabled, Filter: req.Filter, Transform: req.Transform})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, consumerView(c))
	return nil
}

func (s *Server) listConsumers(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	cs, err := s.store.ListConsumers(r.Context(), who.Scope)
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

func (s *Server) getConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.store.Consumer(r.Context(), who.Scope, id)
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
		Filter:     c.Filter,
		Transform:  c.Transform,
		CreatedAt:  c.CreatedAt.UTC(),
	}
}

// RotateSecretRequest asks for a consumer's new signing secret; the old
// one keeps signing beside it for keep_old_for ("24h" when absent, "0s"
// for not at all).
type RotateSecretRequest struct {
	KeepOldFor string `json:"keep_old_for,omitempty"`
}

// RotatedSecret is the new signing secret, shown once, and until when the
// old one still signs (absent when it stopped at once).
type RotatedSecret struct {
	SigningSecret string     `json:"signing_secret"`
	OldValidUntil *time.Time `json:"old_valid_until,omitempty"`
}

func (s *Server) rotateConsumerSecret(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req RotateSecretRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	var keep *time.Duration
	if req.KeepOldFor != "" {
		d, err := time.ParseDuration(req.KeepOldFor)
		if err != nil {
			return intake.Errorf(intake.EINVALID, "keep_old_for must be a duration such as \"24h\"")
		}
		keep = &d
	}
	secret, until, err := s.ctl.RotateConsumerSecret(r.Context(), who, id, keep)
	if err != nil {
		return err
	}
	out := RotatedSecret{SigningSecret: secret}
	if !until.IsZero() {
		u := until.UTC()
		out.OldValidUntil = &u
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

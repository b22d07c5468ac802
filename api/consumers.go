package api

import (
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

func (s *Server) createConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req CreateConsumerRequest
	if err := decodeBytes(body, &req); err != nil {
		return err
	}
	ctl, err := controlsUpdate(body, req.ConsumerControls)
	if err != nil {
		return err
	}
	c, secret, err := s.ctl.CreateConsumer(r.Context(), who, control.NewConsumer{OrgID: req.OrgID, Name: req.Name, App: req.App,
		URL: req.URL, EventTypes: req.EventTypes, Completion: req.Completion, Filter: req.Filter, Transform: req.Transform,
		Disabled: req.Enabled != nil && !*req.Enabled, Controls: ctl})
	if err != nil {
		return err
	}
	return s.writeConsumer(w, r, http.StatusCreated, c, secret)
}

func (s *Server) updateConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req UpdateConsumerRequest
	if err := decodeBytes(body, &req); err != nil {
		return err
	}
	u := control.ConsumerUpdate{Name: req.Name, URL: req.URL, EventTypes: req.EventTypes, Completion: req.Completion,
		Enabled: req.Enabled, Filter: req.Filter, Transform: req.Transform}
	if u.ControlsUpdate, err = controlsUpdate(body, req.ConsumerControls); err != nil {
		return err
	}
	if u.Version, err = ifMatch(r); err != nil {
		return err
	}
	c, err := s.ctl.UpdateConsumer(r.Context(), who, id, u)
	if err != nil {
		return err
	}
	return s.writeConsumer(w, r, http.StatusOK, c, "")
}

// controlsUpdate translates the controls of a create or update request
// (body is its JSON, for a null max_in_flight); the control plane checks
// them, for both alike.
func controlsUpdate(body []byte, req ConsumerControls) (control.ControlsUpdate, error) {
	u := control.ControlsUpdate{Paused: req.Paused, RatePerSec: req.RatePerSec, MaxInFlight: req.MaxInFlight,
		Ordering: req.Ordering, BreakerFailures: req.BreakerFailures}
	if u.MaxInFlight == nil && isNull(body, "max_in_flight") {
		u.MaxInFlight = new(int)
	}
	if req.Retry != nil {
		u.RetryAttempts = req.Retry.Attempts
		if req.Retry.Base != nil {
			d, err := control.ParseDuration("retry.base", *req.Retry.Base, "30s")
			if err != nil {
				return u, err
			}
			u.RetryBase = &d
		}
	}
	if req.AutoDisableAfter != nil {
		d, err := control.ParseDuration("auto_disable_after", *req.AutoDisableAfter, "72h")
		if err != nil {
			return u, err
		}
		u.AutoDisableAfter = &d
	}
	return u, nil
}

func (s *Server) listConsumers(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	if err := control.CheckParams(r.URL.Query()); err != nil {
		return err
	}
	cs, err := s.ctl.Consumers(r.Context(), who)
	if err != nil {
		return err
	}
	out := List[Consumer]{Items: make([]Consumer, 0, len(cs))}
	for _, c := range cs {
		out.Items = append(out.Items, statedView(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.ctl.Consumer(r.Context(), who, id)
	if err != nil {
		return err
	}
	setETag(w, c.Version)
	writeJSON(w, http.StatusOK, statedView(c))
	return nil
}

// writeConsumer answers a consumer an action returned, with its state.
func (s *Server) writeConsumer(w http.ResponseWriter, r *http.Request, status int, c intake.Consumer, secret string) error {
	sc, err := s.ctl.Stated(r.Context(), c)
	if err != nil {
		return err
	}
	out := statedView(sc)
	out.SigningSecret = secret
	setETag(w, c.Version)
	writeJSON(w, status, out)
	return nil
}

// pauseConsumer and resumeConsumer hold and release a consumer's
// deliveries.
func (s *Server) pauseConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	return s.setPaused(w, r, who, true)
}

func (s *Server) resumeConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	return s.setPaused(w, r, who, false)
}

func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, who control.Caller, paused bool) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := s.ctl.PauseConsumer(r.Context(), who, id, paused)
	if err != nil {
		return err
	}
	return s.writeConsumer(w, r, http.StatusOK, c, "")
}

func (s *Server) consumerHealth(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	h, err := s.ctl.ConsumerHealth(r.Context(), who, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, healthView(h))
	return nil
}

// testConsumer delivers a test event to a consumer of any kind and
// answers what the destination said.
func (s *Server) testConsumer(w http.ResponseWriter, r *http.Request, who control.Caller) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := s.ctl.TestConsumer(r.Context(), who, id)
	if err != nil {
		return err
	}
	res := t.Result
	writeJSON(w, http.StatusOK, ConsumerTest{EventID: t.EventID, Outcome: res.Outcome, StatusCode: res.StatusCode,
		LatencyMs: float64(res.Latency.Microseconds()) / 1000, Error: res.Err})
	return nil
}

// healthView is a consumer's health as the API shows it.
func healthView(h intake.ConsumerHealth) ConsumerHealth {
	return ConsumerHealth{
		State: h.State, Delivered1h: h.Delivered1h, Failed1h: h.Failed1h, P50Ms: ms(h.P50), P99Ms: ms(h.P99),
		LastStatus: h.LastStatus, LastError: h.LastError, LastDeliveryAt: optionalTime(h.LastDeliveryAt),
		InFlight: h.InFlight, Held: h.Held, Due: h.Due, OldestDueAt: optionalTime(h.OldestDueAt),
		Retrying: h.Retrying, NextAttemptAt: optionalTime(h.NextAttemptAt), FilterErrors1h: h.FilterErrors1h,
		ConsecutiveFailures: h.Failures,
	}
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// statedView shows a consumer with its state.
func statedView(c control.StatedConsumer) Consumer {
	out := consumerView(c.Consumer)
	out.State = c.State
	return out
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

		Paused:           c.Controls.Paused,
		RatePerSec:       c.Controls.RatePerSec,
		MaxInFlight:      maxInFlight(c.Controls.MaxInFlight),
		Ordering:         c.Controls.Ordering,
		RetryAttempts:    c.Controls.Attempts(),
		RetryBase:        durationOrEmpty(c.Controls.Retry.Base),
		BreakerFailures:  orDefault(c.Controls.BreakerFailures, intake.DefaultBreakerFailures),
		AutoDisableAfter: time.Duration(orDefault(int64(c.Controls.AutoDisableAfter), int64(intake.DefaultAutoDisableAfter))).String(),
	}
}

func maxInFlight(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func durationOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
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
		d, err := control.ParseDuration("keep_old_for", req.KeepOldFor, "24h")
		if err != nil {
			return err
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

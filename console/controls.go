package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// pauseConsumer holds or releases a consumer's deliveries.
func (c *Console) pauseConsumer(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	paused := r.PostFormValue("paused") == "true"
	if _, err := c.ctl.PauseConsumer(r.Context(), s.caller(), id, paused); err != nil {
		return err
	}
	if paused {
		return redirect(w, r, "/console/consumers/"+id+"?flash=consumer-paused")
	}
	return redirect(w, r, "/console/consumers/"+id+"?flash=consumer-resumed")
}

// rotateConsumerSecret gives the consumer a new secret and shows it on the
// page this once; the old one keeps signing for the overlap chosen.
func (c *Console) rotateConsumerSecret(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	keep, err := formDuration(r, "keep_old_for")
	if err != nil {
		return err
	}
	secret, until, err := c.ctl.RotateConsumerSecret(r.Context(), s.caller(), id, keep)
	if err != nil {
		return err
	}
	cs, err := c.consumerRow(r.Context(), s, id)
	if err != nil {
		return err
	}
	return c.renderConsumer(w, r, s, consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform, NewSecret: secret, OldSecretUntil: until})
}

// testConsumer delivers a test event to the consumer and shows its page
// with what the destination said.
func (c *Console) testConsumer(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.ctl.TestConsumer(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	cs, err := c.consumerRow(r.Context(), s, id)
	if err != nil {
		return err
	}
	return c.renderConsumer(w, r, s, consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform, Test: &t})
}

// consumerEdit is the consumer settings form as the page shows it.
type consumerEdit struct {
	Name, URL, EventTypes string
	Error                 string
}

// saveConsumerSettings changes a consumer's name, URL and event types over
// the version the page showed. A refused change (a bad value, or the
// consumer changed since) shows the page again with what was entered and
// why.
func (c *Console) saveConsumerSettings(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	edit := consumerEdit{Name: r.PostFormValue("name"), URL: strings.TrimSpace(r.PostFormValue("url")),
		EventTypes: r.PostFormValue("event_types")}
	types := formEventTypes(r)
	u := control.ConsumerUpdate{Name: &edit.Name, URL: &edit.URL, EventTypes: &types}
	if u.Version, err = formVersion(r); err != nil {
		return err
	}
	_, err = c.ctl.UpdateConsumer(r.Context(), s.caller(), id, u)
	switch code := intake.ErrorCode(err); {
	case err == nil:
		return redirect(w, r, "/console/consumers/"+id+"?flash=consumer-saved")
	case code == intake.EINVALID || code == intake.EVERSION:
		cs, rerr := c.consumerRow(r.Context(), s, id)
		if rerr != nil {
			return rerr
		}
		edit.Error = intake.ErrorMessage(err)
		if code == intake.EVERSION {
			edit.Error += " Saving again saves what is entered here over it."
		}
		return c.renderConsumer(w, r, s, consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform, Edit: edit,
			status: control.HTTPStatus(err)})
	default:
		return err
	}
}

// formEventTypes reads a form's event types: patterns separated by commas
// or white space.
func formEventTypes(r *http.Request) []string {
	return strings.FieldsFunc(r.PostFormValue("event_types"), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t'
	})
}

// controlsEdit is the delivery controls form: the consumer's own, or what
// was entered and refused, with why.
type controlsEdit struct {
	Rate, MaxInFlight, Ordering, Attempts, Base, Failures, Disable string
	Error                                                          string
}

// controlsForm fills the form from a consumer's controls; an unset one is
// empty (no limit, or the default).
func controlsForm(k intake.Controls) controlsEdit {
	e := controlsEdit{Ordering: k.Ordering}
	if k.RatePerSec != 0 {
		e.Rate = strconv.FormatFloat(k.RatePerSec, 'f', -1, 64)
	}
	if k.MaxInFlight != 0 {
		e.MaxInFlight = strconv.Itoa(k.MaxInFlight)
	}
	if k.Retry.Attempts != 0 {
		e.Attempts = strconv.Itoa(k.Retry.Attempts)
	}
	if k.Retry.Base != 0 {
		e.Base = k.Retry.Base.String()
	}
	if k.BreakerFailures != 0 {
		e.Failures = strconv.Itoa(k.BreakerFailures)
	}
	if k.AutoDisableAfter != 0 {
		e.Disable = k.AutoDisableAfter.String()
	}
	return e
}

// saveConsumerControls saves the delivery controls form through the
// control plane, which checks them all before saving any. An empty field
// means none (or the default). A refused form shows the page again with
// what was entered and why.
func (c *Console) saveConsumerControls(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	edit := controlsEdit{Rate: r.PostFormValue("rate_per_sec"), MaxInFlight: r.PostFormValue("max_in_flight"),
		Ordering: strings.TrimSpace(r.PostFormValue("ordering")), Attempts: r.PostFormValue("retry_attempts"),
		Base: r.PostFormValue("retry_base"), Failures: r.PostFormValue("breaker_failures"), Disable: r.PostFormValue("auto_disable_after")}
	u, err := controlsUpdate(r, edit.Ordering)
	if err == nil {
		_, err = c.ctl.UpdateConsumer(r.Context(), s.caller(), id, u)
	}
	switch {
	case err == nil:
		return redirect(w, r, "/console/consumers/"+id+"?flash=controls-saved")
	case intake.ErrorCode(err) == intake.EINVALID:
		cs, rerr := c.consumerRow(r.Context(), s, id)
		if rerr != nil {
			return rerr
		}
		edit.Error = intake.ErrorMessage(err)
		return c.renderConsumer(w, r, s, consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform, Controls: edit,
			status: control.HTTPStatus(err)})
	default:
		return err
	}
}

// controlsUpdate reads the controls form into a change of every control.
func controlsUpdate(r *http.Request, ordering string) (control.ConsumerUpdate, error) {
	var u control.ConsumerUpdate
	rate, err := formFloat(r, "rate_per_sec")
	if err != nil {
		return u, err
	}
	u.RatePerSec = &rate
	inFlight, err := formInt(r, "max_in_flight")
	if err != nil {
		return u, err
	}
	u.MaxInFlight = &inFlight
	u.Ordering = &ordering
	attempts, err := formInt(r, "retry_attempts")
	if err != nil {
		return u, err
	}
	u.RetryAttempts = &attempts
	base, err := formDuration(r, "retry_base")
	if err != nil {
		return u, err
	}
	u.RetryBase = orZero(base)
	failures, err := formInt(r, "breaker_failures")
	if err != nil {
		return u, err
	}
	u.BreakerFailures = &failures
	disable, err := formDuration(r, "auto_disable_after")
	if err != nil {
		return u, err
	}
	u.AutoDisableAfter = orZero(disable)
	return u, nil
}

func orZero(d *time.Duration) *time.Duration {
	if d == nil {
		return new(time.Duration)
	}
	return d
}

func formFloat(r *http.Request, name string) (float64, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, intake.Errorf(intake.EINVALID, "%s must be a number", name)
	}
	return f, nil
}

func formInt(r *http.Request, name string) (int, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, intake.Errorf(intake.EINVALID, "%s must be a whole number", name)
	}
	return n, nil
}

// formDuration reads a duration field; nil when empty.
func formDuration(r *http.Request, name string) (*time.Duration, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return nil, nil
	}
	d, err := control.ParseDuration(name, v, "72h")
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// formVersion is the version of the row the form was shown with (0: none,
// or a row not made yet): the change is made over it, or refused.
func formVersion(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.PostFormValue("version"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, intake.Errorf(intake.EINVALID, "version must be a number")
	}
	return n, nil
}

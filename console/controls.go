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
	if v := r.PostFormValue("version"); v != "" {
		if u.Version, err = strconv.ParseInt(v, 10, 64); err != nil {
			return intake.Errorf(intake.EINVALID, "version must be a number")
		}
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

// saveConsumerControls saves the delivery controls form through the
// control plane, which checks them all before saving any. An empty field
// means none (or the default).
func (c *Console) saveConsumerControls(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var u control.ConsumerUpdate
	rate, err := formFloat(r, "rate_per_sec")
	if err != nil {
		return err
	}
	u.RatePerSec = &rate
	inFlight, err := formInt(r, "max_in_flight")
	if err != nil {
		return err
	}
	u.MaxInFlight = &inFlight
	ordering := strings.TrimSpace(r.PostFormValue("ordering"))
	u.Ordering = &ordering
	attempts, err := formInt(r, "retry_attempts")
	if err != nil {
		return err
	}
	u.RetryAttempts = &attempts
	base, err := formDuration(r, "retry_base")
	if err != nil {
		return err
	}
	u.RetryBase = orZero(base)
	failures, err := formInt(r, "breaker_failures")
	if err != nil {
		return err
	}
	u.BreakerFailures = &failures
	disable, err := formDuration(r, "auto_disable_after")
	if err != nil {
		return err
	}
	u.AutoDisableAfter = orZero(disable)
	if _, err := c.ctl.UpdateConsumer(r.Context(), s.caller(), id, u); err != nil {
		return err
	}
	return redirect(w, r, "/console/consumers/"+id+"?flash=controls-saved")
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

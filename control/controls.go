package control

import (
	"context"
	"fmt"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/rules"
)

// ControlsUpdate sets a consumer's delivery controls (DESIGN §9), on
// creation or in an update; nil leaves a control as it is.
type ControlsUpdate struct {
	Paused      *bool
	RatePerSec  *float64 // 0 removes the limit
	MaxInFlight *int     // 0 removes the limit
	Ordering    *string  // "", "subject" or a CEL key expression
	// RetryAttempts and RetryBase set the consumer's own schedule; 0
	// returns to the server's.
	RetryAttempts    *int
	RetryBase        *time.Duration
	BreakerFailures  *int           // 0: the default (10)
	AutoDisableAfter *time.Duration // 0: the default (72h)
}

// applyControls sets the delivery controls u gives, checked as a whole:
// nothing is set unless every one is valid. Creation and every update
// check controls here, so each is refused with one message.
func (p *Plane) applyControls(ctx context.Context, org string, ctl *intake.Controls, u ControlsUpdate) error {
	next := *ctl
	if u.Paused != nil {
		next.Paused = *u.Paused
	}
	if u.RatePerSec != nil {
		next.RatePerSec = *u.RatePerSec
	}
	if u.MaxInFlight != nil {
		next.MaxInFlight = *u.MaxInFlight
	}
	if u.Ordering != nil {
		if *u.Ordering != "" && *u.Ordering != intake.OrderingSubject && *u.Ordering != ctl.Ordering {
			if err := p.rules.Check(ctx, org, rules.KindKey, *u.Ordering); err != nil {
				return orderingError(err)
			}
		}
		next.Ordering = *u.Ordering
	}
	if u.RetryAttempts != nil {
		next.Retry.Attempts = *u.RetryAttempts
	}
	if u.RetryBase != nil {
		if *u.RetryBase != 0 && *u.RetryBase < time.Millisecond {
			return intake.Errorf(intake.EINVALID, "retry.base must be between 1ms and 24h")
		}
		next.Retry.Base = *u.RetryBase
	}
	if u.BreakerFailures != nil {
		next.BreakerFailures = *u.BreakerFailures
	}
	if u.AutoDisableAfter != nil {
		next.AutoDisableAfter = *u.AutoDisableAfter
	}
	if err := next.Validate(); err != nil {
		return err
	}
	*ctl = next
	return nil
}

// controlChanges is the audit detail of the controls that changed.
func controlChanges(old, new intake.Controls) []string {
	var d []string
	add := func(changed bool, format string, v any) {
		if changed {
			d = append(d, fmt.Sprintf(format, v))
		}
	}
	add(old.Paused != new.Paused, "paused=%v", new.Paused)
	add(old.RatePerSec != new.RatePerSec, "rate_per_sec=%g", new.RatePerSec)
	add(old.MaxInFlight != new.MaxInFlight, "max_in_flight=%d", new.MaxInFlight)
	add(old.Retry.Attempts != new.Retry.Attempts, "retry.attempts=%d", new.Retry.Attempts)
	add(old.Retry.Base != new.Retry.Base, "retry.base=%s", new.Retry.Base)
	add(old.BreakerFailures != new.BreakerFailures, "breaker_failures=%d", new.BreakerFailures)
	add(old.AutoDisableAfter != new.AutoDisableAfter, "auto_disable_after=%s", new.AutoDisableAfter)
	return d
}

// PauseConsumer holds a consumer's deliveries (paused) or lets them go at
// its rate (resumed). Held deliveries spend no attempt and never make an
// event dead. Pausing a paused consumer changes nothing and is not an
// error.
func (p *Plane) PauseConsumer(ctx context.Context, c Caller, id string, paused bool) (intake.Consumer, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return intake.Consumer{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Consumer{}, err
	}
	return compareAndSet(0, func() (intake.Consumer, error) {
		cs, err := p.store.Consumer(ctx, c.Scope, id)
		if err != nil {
			return intake.Consumer{}, err
		}
		if cs.Controls.Paused == paused {
			return cs, nil
		}
		cs.Controls.Paused = paused
		action := "consumer.pause"
		if !paused {
			action = "consumer.resume"
		}
		if err := p.store.UpdateConsumer(ctx, c.Scope, cs, p.entry(c, cs.OrgID, action, "consumer", cs.ID, "")); err != nil {
			return intake.Consumer{}, err
		}
		cs.Version++
		return cs, nil
	})
}

// ConsumerHealth is how deliveries to a consumer stand now.
func (p *Plane) ConsumerHealth(ctx context.Context, c Caller, id string) (intake.ConsumerHealth, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.ConsumerHealth{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.ConsumerHealth{}, err
	}
	return p.store.ConsumerHealth(ctx, c.Scope, id, p.now())
}

// orderingError names the setting a key expression that does not compile
// came from.
func orderingError(err error) error {
	if intake.ErrorCode(err) == intake.EINVALID {
		return intake.Errorf(intake.EINVALID, "ordering: %s", intake.ErrorMessage(err))
	}
	return err
}

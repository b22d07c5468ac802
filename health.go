package intake

import (
	"context"
	"time"
)

// Consumer states (DESIGN §16): what a consumer's deliveries do now.
const (
	// ConsumerEnabled: calls are made and the last one succeeded (or
	// none was made yet).
	ConsumerEnabled = "enabled"
	// ConsumerFailing: enabled, and its last call failed; the routes
	// wait for their next attempt.
	ConsumerFailing  = "failing"
	ConsumerPaused   = "paused"
	ConsumerTripped  = "tripped"
	ConsumerDisabled = "disabled"
)

// FilterErrorPrefix begins the error of a filtered delivery record whose
// filter failed on the event (rather than declined it).
const FilterErrorPrefix = "filter_error: "

// ConsumerStanding is what a store reads of a consumer and its lane to
// name the consumer's state.
type ConsumerStanding struct {
	Enabled, Paused, Tripped bool
	// Failures is the lane's count of consecutive failed calls; ProbeAt
	// is when a tripped breaker lets its next call through.
	Failures int
	ProbeAt  time.Time
}

// State is the consumer's state: disabled, paused and tripped before
// failing, failing before enabled.
func (s ConsumerStanding) State() string {
	switch {
	case !s.Enabled:
		return ConsumerDisabled
	case s.Paused:
		return ConsumerPaused
	case s.Tripped:
		return ConsumerTripped
	case s.Failures > 0:
		return ConsumerFailing
	}
	return ConsumerEnabled
}

// ConsumerHealth is how deliveries to one consumer stand (DESIGN §9, §16).
type ConsumerHealth struct {
	State string // enabled, failing, paused, tripped or disabled
	// Delivered1h and Failed1h count the calls of the last hour that
	// succeeded and failed; P50 and P99 are their latencies.
	Delivered1h, Failed1h int
	P50, P99              time.Duration
	// FilterErrors1h counts the events of the last hour whose filter
	// failed on them (each recorded filtered, with the filter's error).
	FilterErrors1h int
	LastStatus     int
	LastError      string
	LastDeliveryAt time.Time
	// InFlight: calls made and not settled. Held: routes waiting on a
	// pause or an open breaker. Due: routes whose time has come, waiting
	// for a call; OldestDueAt is the earliest of them. Retrying: routes
	// waiting for a later attempt after a failed call.
	InFlight, Held, Due, Retrying int
	OldestDueAt                   time.Time
	// NextAttemptAt is when the next call is due: now or earlier while
	// routes are due, else the earliest retry, or a tripped breaker's
	// probe; zero when nothing waits or the consumer is paused or
	// disabled.
	NextAttemptAt time.Time
	// Failures is the breaker's count of consecutive failed calls.
	Failures int
}

// Health reads a consumer's delivery health and every consumer's state.
type Health interface {
	ConsumerHealth(ctx context.Context, sc Scope, consumerID string, now time.Time) (ConsumerHealth, error)
	// ConsumerStates names the state of every consumer visible in sc
	// that is not deleted, by id.
	ConsumerStates(ctx context.Context, sc Scope) (map[string]string, error)
	// ConsumerStats counts a consumer's calls visible in sc in each bucket
	// of window w ending at now (see BucketCalls).
	ConsumerStats(ctx context.Context, sc Scope, consumerID string, w StatsWindow, now time.Time) ([]DeliveryBucket, error)
	// ConsumerDeliveries lists a consumer's last limit delivery records
	// visible in sc, newest first.
	ConsumerDeliveries(ctx context.Context, sc Scope, consumerID string, limit int) ([]Delivery, error)
}

// Backlog is what a store counted of a consumer's waiting routes that are
// not in flight: all of them, those due and the earliest due, and those
// scheduled later and the earliest of those.
type Backlog struct {
	Waiting, Due, Later  int
	OldestDue, NextLater time.Time
}

// SetBacklog fills in a consumer's state and backlog. A paused or tripped
// consumer's waiting routes are held, neither due nor retrying.
func (h *ConsumerHealth) SetBacklog(s ConsumerStanding, b Backlog) {
	h.State, h.Failures = s.State(), s.Failures
	switch h.State {
	case ConsumerDisabled:
		return
	case ConsumerPaused:
		h.Held = b.Waiting
		return
	case ConsumerTripped:
		h.Held = b.Waiting
		if b.Waiting > 0 {
			h.NextAttemptAt = s.ProbeAt
		}
		return
	}
	h.Due, h.OldestDueAt, h.Retrying = b.Due, b.OldestDue, b.Later
	h.NextAttemptAt = earliestOf(b.OldestDue, b.NextLater)
}

// earliestOf is the earlier of two times, ignoring zero ones.
func earliestOf(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

package intake

import "time"

// RetryPolicy is a consumer's own retry schedule; zero fields take the
// server's.
type RetryPolicy struct {
	Attempts int
	Base     time.Duration
}

// OrderingSubject is the ordering that keys a consumer's events by the
// provider object they are about (its connection and first object id).
const OrderingSubject = "subject"

// Consumer control defaults and bounds (DESIGN §9).
const (
	DefaultBreakerFailures  = 10
	DefaultAutoDisableAfter = 72 * time.Hour
	BreakerFirstProbe       = 30 * time.Second
	BreakerMaxProbe         = 30 * time.Minute
	MaxRatePerSec           = 10000
	MaxInFlightLimit        = 10000
	MaxRetryAttempts        = 50
)

// Controls is how deliveries to a consumer are paced (DESIGN §9).
type Controls struct {
	Paused bool
	// RatePerSec caps calls per second across all processes; 0: no cap.
	RatePerSec float64
	// MaxInFlight caps calls in flight across all processes (1: one at a
	// time); 0: no cap.
	MaxInFlight int
	// Ordering is "", "subject" or a CEL expression giving a key: for one
	// key the consumer receives an event only after the earlier ones were
	// handled, ignored, filtered or dead for it.
	Ordering string
	Retry    RetryPolicy
	// BreakerFailures consecutive failed calls trip the breaker; 0: the
	// default (10).
	BreakerFailures int
	// AutoDisableAfter of failing continuously disables the consumer; 0:
	// the default (72 h).
	AutoDisableAfter time.Duration
}

// Validate checks the controls; ordering expressions are checked by the
// rules engine, not here.
func (c Controls) Validate() error {
	switch {
	case c.RatePerSec < 0 || c.RatePerSec > MaxRatePerSec || c.RatePerSec != c.RatePerSec:
		return Errorf(EINVALID, "rate_per_sec must be between 0 (no limit) and %d", MaxRatePerSec)
	case c.MaxInFlight < 0 || c.MaxInFlight > MaxInFlightLimit:
		return Errorf(EINVALID, "max_in_flight must be between 1 (one call at a time) and %d, or 0 for no limit", MaxInFlightLimit)
	case c.Retry.Attempts < 0 || c.Retry.Attempts > MaxRetryAttempts:
		return Errorf(EINVALID, "retry.attempts must be between 1 and %d", MaxRetryAttempts)
	case c.Retry.Base < 0 || c.Retry.Base > 24*time.Hour:
		return Errorf(EINVALID, "retry.base must be between 1ms and 24h")
	case c.BreakerFailures < 0 || c.BreakerFailures > 1000:
		return Errorf(EINVALID, "breaker_failures must be between 1 and 1000")
	case c.AutoDisableAfter < 0 || (c.AutoDisableAfter > 0 && c.AutoDisableAfter < time.Hour) || c.AutoDisableAfter > 90*24*time.Hour:
		return Errorf(EINVALID, "auto_disable_after must be between 1h and 90 days")
	}
	return nil
}

// Unpaced reports whether nothing holds this consumer's calls back, so a
// route to it can be leased in the commit that creates it.
func (c Controls) Unpaced() bool {
	return !c.Paused && c.RatePerSec == 0 && c.MaxInFlight == 0 && c.Ordering == ""
}

// Attempts returns the consumer's retry budget.
func (c Controls) Attempts() int {
	if c.Retry.Attempts > 0 {
		return c.Retry.Attempts
	}
	return DefaultMaxAttempts
}

// Backoff returns the consumer's schedule: the server's with the
// consumer's base when it sets one.
func (c Controls) Backoff(server Backoff) Backoff {
	if c.Retry.Base > 0 {
		server.Base = c.Retry.Base
	}
	return server
}

func (c Controls) breakerFailures() int {
	if c.BreakerFailures > 0 {
		return c.BreakerFailures
	}
	return DefaultBreakerFailures
}

func (c Controls) autoDisableAfter() time.Duration {
	if c.AutoDisableAfter > 0 {
		return c.AutoDisableAfter
	}
	return DefaultAutoDisableAfter
}

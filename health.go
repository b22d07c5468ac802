package intake

import (
	"context"
	"time"
)

// Consumer states as health reports them.
const (
	ConsumerEnabled  = "enabled"
	ConsumerPaused   = "paused"
	ConsumerTripped  = "tripped"
	ConsumerDisabled = "disabled"
)

// ConsumerHealth is how deliveries to one consumer stand (DESIGN §9).
type ConsumerHealth struct {
	State string // enabled, paused, tripped or disabled
	// Delivered1h and Failed1h count the calls of the last hour that
	// succeeded and failed; P50 and P99 are their latencies.
	Delivered1h, Failed1h int
	P50, P99              time.Duration
	LastStatus            int
	LastError             string
	LastDeliveryAt        time.Time
	// InFlight: calls made and not settled. Held: routes waiting on a
	// pause or an open breaker. Due: routes whose time has come, waiting
	// for a call; OldestDueAt is the earliest of them.
	InFlight, Held, Due int
	OldestDueAt         time.Time
	// Failures is the breaker's count of consecutive failed calls.
	Failures int
}

// Health reads a consumer's delivery health.
type Health interface {
	ConsumerHealth(ctx context.Context, sc Scope, consumerID string, now time.Time) (ConsumerHealth, error)
}

// SetBacklog fills in a consumer's state and backlog from what a store
// counted: its waiting unleased routes, those of them due and the earliest
// due. A paused or tripped consumer's waiting routes are held, not due.
func (h *ConsumerHealth) SetBacklog(enabled, paused, tripped bool, waiting, due int, oldestDue time.Time) {
	switch {
	case !enabled:
		h.State = ConsumerDisabled
	case paused:
		h.State = ConsumerPaused
	case tripped:
		h.State = ConsumerTripped
	default:
		h.State = ConsumerEnabled
	}
	if paused || tripped {
		h.Held = waiting
		return
	}
	h.Due, h.OldestDueAt = due, oldestDue
}

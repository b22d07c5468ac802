package handoff

import (
	"sync"

	"github.com/intakehq/intake"
)

// Calls carries settles from the worker to the router: each holds the
// fan-outs judged for a message's events before the settle
// (fanout.Judger), and what the settle did with them, among which the
// first calls it leased, to be made with no claim on the call slots the
// Judger held for them while judging. The worker has given back the slots
// of routes the settle did not lease (a consumer whose breaker tripped
// since, an event not created, a settle that failed) before it hands the
// settle over. Give never blocks: a settle that has committed is never
// held up by the router.
type Calls struct {
	mu      sync.Mutex
	settled []Settled
	ready   chan struct{}
}

// Settled is one settle as the router needs it.
type Settled struct {
	// OrgID is the settled message's org, whose call slots the fan-outs
	// hold.
	OrgID string
	// FanOuts are the fan-outs judged for the settle, by event id.
	FanOuts map[string]intake.FanOut
	// Settled is what the settle did; zero when it failed.
	Settled intake.Settled
}

// NewCalls returns an empty hand-off of settles.
func NewCalls() *Calls { return &Calls{ready: make(chan struct{}, 1)} }

// Give hands a settle to the router and wakes it.
func (c *Calls) Give(s Settled) {
	c.mu.Lock()
	c.settled = append(c.settled, s)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// Ready receives (coalesced) when settles wait; a nil Calls' never does.
func (c *Calls) Ready() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.ready
}

// Take returns the settles waiting, oldest first, and empties the queue.
func (c *Calls) Take() []Settled {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.settled
	c.settled = nil
	return out
}

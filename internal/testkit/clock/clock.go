// Package clock is the one clock intake's tests move by hand. It imports
// nothing of intake's, so the tests of the packages testkit itself builds
// on (the stores, the rules engine) can use it too; testkit.Clock is this
// clock.
package clock

import (
	"sync"
	"time"
)

// Clock is an intake.Clock that moves only when a test says so.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	tick time.Duration
}

// New returns a clock showing t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; a ticking clock moves on by its tick first.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.tick)
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Tick makes every read move the clock on by d, so a duration measured
// between two reads is known without measuring anything; 0 stops it.
func (c *Clock) Tick(d time.Duration) { c.mu.Lock(); c.tick = d; c.mu.Unlock() }

// Package pressure tells processing when ingest needs the store and the
// CPU more than it does.
package pressure

import "sync"

// Gauge counts the requests waiting for an ingest commit, so that
// processing yields the writer and the CPU to them under a burst (DESIGN.md
// §2): while more than Threshold wait, the worker and the router take new
// work only within a small share of their slots, and resume in full once
// the queue falls back. Nothing is refused or lost meanwhile: messages
// ingested during a burst are stored queued and claimed as it drains.
//
// A nil Gauge is never high.
type Gauge struct {
	// Threshold is how many requests may wait for a commit before
	// processing holds back.
	Threshold int
	// Share is the fraction of a stage's slots it keeps using while
	// ingest is under pressure: one in Share, at least one (default 8).
	Share int

	mu      sync.Mutex
	waiting int
	calm    chan struct{} // closed while not high; replaced when it turns high
}

// New returns a gauge that turns high above threshold requests waiting
// for a commit.
func New(threshold int) *Gauge {
	return &Gauge{Threshold: threshold}
}

// Enter counts a request that now waits for its commit.
func (p *Gauge) Enter() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.waiting++
	if p.waiting == p.Threshold+1 {
		p.calm = make(chan struct{})
	}
	p.mu.Unlock()
}

// Leave counts a request whose commit returned.
func (p *Gauge) Leave() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.waiting--
	if p.waiting == p.Threshold && p.calm != nil {
		close(p.calm)
		p.calm = nil
	}
	p.mu.Unlock()
}

// Waiting is how many requests wait for a commit now.
func (p *Gauge) Waiting() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// closedCalm is what Calm returns while ingest is not under pressure.
var closedCalm = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Calm returns a channel closed once ingest is not under pressure: at once
// unless more than Threshold requests wait for a commit now.
func (p *Gauge) Calm() <-chan struct{} {
	if p == nil {
		return closedCalm
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calm == nil {
		return closedCalm
	}
	return p.calm
}

// High reports whether more than Threshold requests wait for a commit.
func (p *Gauge) High() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calm != nil
}

// Limit is how many of a stage's slots it may fill now: all of them when
// ingest is not under pressure, else one in Share (at least one).
func (p *Gauge) Limit(slots int) int {
	if !p.High() {
		return slots
	}
	share := p.Share
	if share <= 0 {
		share = 8
	}
	return max(1, slots/share)
}

package fanout

import (
	"maps"
	"sync"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// DefaultConsumerShare is the most calls one consumer may have in flight in
// a process unless it sets its own max_in_flight.
const DefaultConsumerShare = 64

// callSlots are the process's call slots, counted by the org and the
// consumer holding each, so that none holds more than its share (DESIGN
// §18): a consumer at most its consumer share, an org at most its share
// of the slots (intake.CallShares.OrgShare). Calls cannot be taken
// back once made, so a share is a bound on what an org may take, leaving
// room for the next org; a hanging consumer fills its own share and waits
// there.
type callSlots struct {
	capacity      int
	consumerShare int

	mu        sync.Mutex
	held      int
	orgs      map[string]int // calls in flight per org; an org holding none is not in it
	consumers map[string]int // calls in flight per consumer
}

func newCallSlots(capacity, consumerShare int) *callSlots {
	return &callSlots{capacity: capacity, consumerShare: consumerShare, orgs: map[string]int{}, consumers: map[string]int{}}
}

// free is how many more calls may start within limit, the slots usable
// now (fewer than the capacity while ingest is under pressure).
func (s *callSlots) free(limit int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return limit - s.held
}

// shares is what a claim of up to n calls may take within limit, for the
// store to apply consumer by consumer. The claimed calls are then held with
// hold.
func (s *callSlots) shares(n, limit int) intake.CallShares {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.sharesLocked(limit)
	cs.Total = min(n, cs.Total)
	cs.Org, cs.Consumer = maps.Clone(s.orgs), maps.Clone(s.consumers)
	return cs
}

// sharesLocked is the shares as they stand, over the live counts; s.mu is
// held.
func (s *callSlots) sharesLocked(limit int) intake.CallShares {
	return intake.CallShares{Total: limit - s.held, Slots: s.capacity, Share: fair.ShareOf[int], Org: s.orgs,
		ConsumerShare: s.consumerShare, Consumer: s.consumers}
}

// tryHold takes a slot for one call to consumer (of org, paced by c) if
// its shares allow one within limit.
func (s *callSlots) tryHold(org, consumer string, c intake.Controls, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.sharesLocked(limit)
	if cs.Allow(org, consumer, c, 1) < 1 {
		return false
	}
	s.holdLocked(org, consumer, 1)
	return true
}

// hold takes n slots for calls to consumer of org that a claim within its
// shares leased.
func (s *callSlots) hold(org, consumer string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdLocked(org, consumer, n)
}

func (s *callSlots) holdLocked(org, consumer string, n int) {
	s.held += n
	s.orgs[org] += n
	s.consumers[consumer] += n
}

// release frees n slots of consumer of org.
func (s *callSlots) release(org, consumer string, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held -= n
	if s.orgs[org] -= n; s.orgs[org] <= 0 {
		delete(s.orgs, org)
	}
	if s.consumers[consumer] -= n; s.consumers[consumer] <= 0 {
		delete(s.consumers, consumer)
	}
}

// Held counts the slots one fan-out (or one settle's fan-outs) holds for
// the calls it may lease, per consumer of its org, so that those of routes
// the store did not lease (a tripped breaker, a route already there) are
// given back (GiveBack).
type Held struct {
	org string
	n   map[string]int
}

// NewHeld returns an empty count of the slots held for org's fan-outs.
func NewHeld(org string) *Held { return &Held{org: org} }

// take holds a slot for a route of a fan-out to c when c is unpaced and
// its shares have one left, and marks every other route unleased: the store
// leases no route this process holds no slot for, even one to a consumer
// whose controls changed since the router read them.
func (j *Judger) take(t *Held, c *intake.Consumer, route *intake.FanOutRoute) {
	if route.Filtered || !c.Controls.Unpaced() || !j.slots.tryHold(t.org, c.ID, c.Controls, j.Limit()) {
		route.Unleased = true
		return
	}
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[c.ID]++
}

// add moves the slots o holds into t.
func (t *Held) add(o *Held) {
	for id, n := range o.n {
		if t.n == nil {
			t.n = map[string]int{}
		}
		t.n[id] += n
	}
	o.n = nil
}

// GiveBack frees the slots held but not used by the calls leased, which
// keep theirs until they settle (Release).
func (j *Judger) GiveBack(t *Held, leased []intake.RouteClaim) {
	for _, c := range leased {
		if t.n[c.ConsumerID] > 0 {
			t.n[c.ConsumerID]--
		}
	}
	for id, n := range t.n {
		j.Release(t.org, id, n)
	}
	t.n = nil
}

// Limit is how many slots may be used now: all of them, fewer while
// ingest is under pressure.
func (j *Judger) Limit() int { return j.cfg.Pressure.Limit(j.cfg.MaxEvents) }

// Free is how many more calls this process may start.
func (j *Judger) Free() int { return j.slots.free(j.Limit()) }

// Shares is what a claim of up to n calls may take now, for the store to
// apply consumer by consumer. The claimed calls are then held with Hold.
func (j *Judger) Shares(n int) intake.CallShares { return j.slots.shares(n, j.Limit()) }

// Hold takes n slots for calls to consumer of org that a claim within its
// shares leased.
func (j *Judger) Hold(org, consumer string, n int) { j.slots.hold(org, consumer, n) }

// Release frees n call slots of a consumer, when its calls have settled,
// and wakes what waits for a slot (Wake).
func (j *Judger) Release(org, consumer string, n int) {
	if n <= 0 {
		return
	}
	j.slots.release(org, consumer, n)
	j.wokenMu.Lock()
	defer j.wokenMu.Unlock()
	for _, ch := range j.woken {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Wake has ch receive (coalesced, never blocking: give it room for one)
// whenever call slots come free.
func (j *Judger) Wake(ch chan<- struct{}) {
	j.wokenMu.Lock()
	defer j.wokenMu.Unlock()
	j.woken = append(j.woken, ch)
}

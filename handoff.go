package intake

import (
	"sync"
	"time"
)

// Handoff carries fresh messages from the commit that stored them to the
// local worker, so fresh work costs no claim and no body read: the commit
// itself takes the message's first lease (see CheckIngest), and the worker
// processes it with the body ingress still holds. A crash loses only the
// memory: the lease expires and any process claims the message.
//
// It is bounded, and shared fairly: one org may hold at most its share of
// the room (see share), so another org's fresh message finds room while one
// org floods. With no room, ingest stores the message queued, for a claim.
// A nil Handoff has no room.
type Handoff struct {
	lease time.Duration
	size  int
	queue chan Claim

	mu   sync.Mutex
	held int            // messages reserved or queued
	orgs map[string]int // of them, per org holding some
}

// NewHandoff returns a hand-off queue of size messages for a worker whose
// attempts are leased for lease.
func NewHandoff(size int, lease time.Duration) *Handoff {
	return &Handoff{lease: lease, size: size, queue: make(chan Claim, size), orgs: map[string]int{}}
}

// Reserve takes room for one message and, if there is room within its
// org's share, makes m the first attempt of a handed-over message:
// processing at attempt 1, leased from its receipt for the worker's lease.
// Each reservation ends in exactly one Give (the commit holding m returned)
// or Cancel (it failed).
func (h *Handoff) Reserve(m *Message) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held >= h.size || h.orgs[m.OrgID] >= h.share(m.OrgID) {
		return false
	}
	h.held++
	h.orgs[m.OrgID]++
	m.State, m.Attempt, m.LeaseUntil = MessageProcessing, 1, m.ReceivedAt.Add(h.lease)
	return true
}

// share is the most room org may hold: three quarters of it shared among
// the orgs holding some, so that a quarter is always left for an org
// holding none; h.mu is held.
func (h *Handoff) share(org string) int {
	others := len(h.orgs)
	if h.orgs[org] > 0 {
		others--
	}
	return max(1, (h.size-h.size/4)/(others+1))
}

// Give hands a committed message, reserved before its commit, to the
// worker. It never blocks: the room was taken by Reserve.
func (h *Handoff) Give(m *Message) {
	h.queue <- Claim{Message: *m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil}
}

// Cancel gives back the room of org's reservation whose commit failed.
func (h *Handoff) Cancel(org string) { h.free(org) }

// Claims is where the worker takes handed-over messages from; a nil
// Handoff's never yields one.
func (h *Handoff) Claims() <-chan Claim {
	if h == nil {
		return nil
	}
	return h.queue
}

// Taken frees the room of a message of org the worker took from Claims and
// started or released.
func (h *Handoff) Taken(org string) { h.free(org) }

func (h *Handoff) free(org string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held--
	if h.orgs[org]--; h.orgs[org] <= 0 {
		delete(h.orgs, org)
	}
}

// CheckIngest is the rule for what ingest records: a received message
// queued for any worker to claim, or one handed over to the local worker,
// which the same commit leases as its first attempt (processing, attempt 1,
// a lease that ends after its receipt). A replay uses InsertReplay.
func CheckIngest(m *Message) error {
	switch {
	case m.State == MessageQueued:
		return nil
	case m.State == MessageProcessing && m.Attempt == 1 && m.LeaseUntil.After(m.ReceivedAt):
		return nil
	}
	return Errorf(EINVALID, "ingest records a queued message, or one handed over as processing at attempt 1 under a lease; "+
		"not %s at attempt %d (a replay uses InsertReplay)", m.State, m.Attempt)
}

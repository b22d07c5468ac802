package intake

import "time"

// Handoff carries fresh messages from the commit that stored them to the
// local worker, so fresh work costs no claim and no body read: the commit
// itself takes the message's first lease (see CheckIngest), and the worker
// processes it with the body ingress still holds. A crash loses only the
// memory: the lease expires and any process claims the message.
//
// It is bounded. With no room, ingest stores the message queued, for a
// claim. A nil Handoff has no room.
type Handoff struct {
	lease time.Duration
	room  chan struct{} // one token per message reserved or queued
	queue chan Claim
}

// NewHandoff returns a hand-off queue of size messages for a worker whose
// attempts are leased for lease.
func NewHandoff(size int, lease time.Duration) *Handoff {
	return &Handoff{lease: lease, room: make(chan struct{}, size), queue: make(chan Claim, size)}
}

// Reserve takes room for one message and, if there is room, makes m the
// first attempt of a handed-over message: processing at attempt 1, leased
// from its receipt for the worker's lease. Each reservation ends in exactly
// one Give (the commit holding m returned) or Cancel (it failed).
func (h *Handoff) Reserve(m *Message) bool {
	if h == nil {
		return false
	}
	select {
	case h.room <- struct{}{}:
	default:
		return false
	}
	m.State, m.Attempt, m.LeaseUntil = MessageProcessing, 1, m.ReceivedAt.Add(h.lease)
	return true
}

// Give hands a committed message, reserved before its commit, to the
// worker. It never blocks: the room was taken by Reserve.
func (h *Handoff) Give(m *Message) {
	h.queue <- Claim{Message: *m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil}
}

// Cancel gives back the room of a reservation whose commit failed.
func (h *Handoff) Cancel() { <-h.room }

// Claims is where the worker takes handed-over messages from; a nil
// Handoff's never yields one.
func (h *Handoff) Claims() <-chan Claim {
	if h == nil {
		return nil
	}
	return h.queue
}

// Taken frees the room of a message the worker took from Claims.
func (h *Handoff) Taken() { <-h.room }

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

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
	q     handoff[Claim]
}

// NewHandoff returns a hand-off queue of size messages for a worker whose
// attempts are leased for lease.
func NewHandoff(size int, lease time.Duration) *Handoff {
	return &Handoff{lease: lease, q: newHandoff[Claim](size)}
}

// Reserve takes room for one message and, if there is room, makes m the
// first attempt of a handed-over message: processing at attempt 1, leased
// from its receipt for the worker's lease. Each reservation ends in exactly
// one Give (the commit holding m returned) or Cancel (it failed).
func (h *Handoff) Reserve(m *Message) bool {
	if h == nil || !h.q.reserve() {
		return false
	}
	m.State, m.Attempt, m.LeaseUntil = MessageProcessing, 1, m.ReceivedAt.Add(h.lease)
	return true
}

// Give hands a committed message, reserved before its commit, to the
// worker. It never blocks: the room was taken by Reserve.
func (h *Handoff) Give(m *Message) {
	h.q.give(Claim{Message: *m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil})
}

// Cancel gives back the room of a reservation whose commit failed.
func (h *Handoff) Cancel() { h.q.cancel() }

// Claims is where the worker takes handed-over messages from; a nil
// Handoff's never yields one.
func (h *Handoff) Claims() <-chan Claim {
	if h == nil {
		return nil
	}
	return h.q.queue
}

// Taken frees the room of a message the worker took from Claims.
func (h *Handoff) Taken() { h.q.taken() }

// EventHandoff carries the events a message's settle created to the local
// router, as Handoff carries messages to the worker: the settle's commit
// takes each event's first routing lease (attempt 1, see
// Settlement.EventLease), and the router fans it out with the event it is
// given, with no claim. A crash loses only the memory: the lease expires
// and any router claims the event, as the next attempt.
//
// It is bounded. With no room, the settle stores the events queued, for a
// claim. A nil EventHandoff has no room.
type EventHandoff struct {
	lease time.Duration
	q     handoff[EventClaim]
	ready chan struct{} // coalesced: an event was given
}

// NewEventHandoff returns a hand-off queue of size events for a router
// whose fan-outs are leased for lease.
func NewEventHandoff(size int, lease time.Duration) *EventHandoff {
	return &EventHandoff{lease: lease, q: newHandoff[EventClaim](size), ready: make(chan struct{}, 1)}
}

// Reserve takes room for n events, all or none, and returns the lease the
// settle gives them from now (zero when there is no room). Each
// reservation ends in one Give per event created and one Cancel for each
// event reserved but not created (a duplicate, or a settle that failed).
func (h *EventHandoff) Reserve(n int, now time.Time) time.Time {
	if h == nil || n <= 0 {
		return time.Time{}
	}
	for i := range n {
		if !h.q.reserve() {
			for range i {
				h.q.cancel()
			}
			return time.Time{}
		}
	}
	return now.Add(h.lease)
}

// Give hands a created event, reserved before its settle, to the router.
func (h *EventHandoff) Give(e Event) {
	h.q.give(EventClaim{Event: e, Attempt: e.Attempt, LeaseUntil: e.LeaseUntil})
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// Ready receives (coalesced) when an event was given; a nil
// EventHandoff's never does.
func (h *EventHandoff) Ready() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.ready
}

// Cancel gives back the room of one event reserved but not created.
func (h *EventHandoff) Cancel() { h.q.cancel() }

// Claims is where the router takes handed-over events from; a nil
// EventHandoff's never yields one.
func (h *EventHandoff) Claims() <-chan EventClaim {
	if h == nil {
		return nil
	}
	return h.q.queue
}

// Taken frees the room of an event the router took from Claims.
func (h *EventHandoff) Taken() { h.q.taken() }

// handoff is a bounded queue whose room is reserved before the commit that
// makes its item and filled after it, so a committed item always finds
// its place.
type handoff[T any] struct {
	room  chan struct{} // one token per item reserved or queued
	queue chan T
}

func newHandoff[T any](size int) handoff[T] {
	return handoff[T]{room: make(chan struct{}, size), queue: make(chan T, size)}
}

func (h *handoff[T]) reserve() bool {
	select {
	case h.room <- struct{}{}:
		return true
	default:
		return false
	}
}

func (h *handoff[T]) give(v T) { h.queue <- v }
func (h *handoff[T]) cancel()  { <-h.room }
func (h *handoff[T]) taken()   { <-h.room }

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

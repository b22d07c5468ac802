// Package handoff carries work from one room of the process to the next
// without a claim: fresh messages from ingest's commit to the worker
// (Messages), and the calls a settle leased from the worker to the router
// (Calls). A crash loses only the memory: the leases expire and any
// process claims the work.
package handoff

import (
	"sync"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// Messages carries fresh messages from the commit that stored them to the
// local worker, so fresh work costs no claim and no body read: the commit
// itself takes the message's first lease (see intake.CheckIngest), and the worker
// processes it with the body ingress still holds. A crash loses only the
// memory: the lease expires and any process claims the message.
//
// It is bounded, and shared fairly: one org may hold at most its share of
// the room (see share), so another org's fresh message finds room while one
// org floods. With no room, ingest stores the message queued, for a claim.
// A nil Messages has no room.
type Messages struct {
	lease time.Duration
	size  int
	queue chan intake.Claim

	mu   sync.Mutex
	held int            // messages reserved or queued
	orgs map[string]int // of them, per org holding some
}

// NewMessages returns a hand-off queue of size messages for a worker whose
// attempts are leased for lease.
func NewMessages(size int, lease time.Duration) *Messages {
	return &Messages{lease: lease, size: size, queue: make(chan intake.Claim, size), orgs: map[string]int{}}
}

// Reserve takes room for one message and, if there is room within its
// org's share, makes m the first attempt of a handed-over message:
// processing at attempt 1, leased from its receipt for the worker's lease.
// Each reservation ends in exactly one Give (the commit holding m returned)
// or Cancel (it failed).
func (h *Messages) Reserve(m *intake.Message) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held >= h.size || int64(h.orgs[m.OrgID]) >= fair.ShareOf(int64(h.size), h.orgs, m.OrgID) {
		return false
	}
	h.held++
	h.orgs[m.OrgID]++
	m.State, m.Attempt, m.LeaseUntil = intake.MessageProcessing, 1, m.ReceivedAt.Add(h.lease)
	return true
}

// Give hands a committed message, reserved before its commit, to the
// worker. It never blocks: the room was taken by Reserve.
func (h *Messages) Give(m *intake.Message) {
	h.queue <- intake.Claim{Message: *m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil}
}

// Cancel gives back the room of org's reservation whose commit failed.
func (h *Messages) Cancel(org string) { h.free(org) }

// Claims is where the worker takes handed-over messages from; a nil
// Messages' never yields one.
func (h *Messages) Claims() <-chan intake.Claim {
	if h == nil {
		return nil
	}
	return h.queue
}

// Taken frees the room of a message of org the worker took from Claims and
// started or released.
func (h *Messages) Taken(org string) { h.free(org) }

func (h *Messages) free(org string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held--
	if h.orgs[org]--; h.orgs[org] <= 0 {
		delete(h.orgs, org)
	}
}

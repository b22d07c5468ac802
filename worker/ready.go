package worker

import (
	"slices"
	"time"

	"github.com/intakehq/intake"
)

// ready holds the work the worker took (handed over or claimed) and has
// not started: a queue per org, the orgs served in turn, so that one org's
// backlog never waits in front of another org's work (DESIGN §18). Only
// Run's goroutine uses it.
type ready struct {
	queues map[string][]waiting
	turn   []string // the orgs with work waiting, the next to serve first
	n      int
}

// waiting is one message taken and not started; handed tells a message
// from the hand-off, whose room is freed when it leaves; since is when it
// was taken (a handed-over message's receipt).
type waiting struct {
	claim  intake.Claim
	handed bool
	since  time.Time
}

func (r *ready) len() int { return r.n }

func (r *ready) push(w waiting) {
	if r.queues == nil {
		r.queues = map[string][]waiting{}
	}
	org := w.claim.Message.OrgID
	if len(r.queues[org]) == 0 {
		r.turn = append(r.turn, org)
	}
	r.queues[org] = append(r.queues[org], w)
	r.n++
}

// pop takes the oldest waiting message of the first org in turn that is
// not held (nil holds none); that org then goes to the back of the turn,
// and the held ones keep their places.
func (r *ready) pop(held func(org string) bool) (waiting, bool) {
	for i, org := range r.turn {
		if held != nil && held(org) {
			continue
		}
		q := r.queues[org]
		w := q[0]
		r.turn = slices.Delete(r.turn, i, i+1)
		if q = q[1:]; len(q) == 0 {
			delete(r.queues, org)
		} else {
			r.queues[org] = q
			r.turn = append(r.turn, org)
		}
		r.n--
		return w, true
	}
	return waiting{}, false
}

// orgs lists the orgs with work waiting: a claim skips them.
func (r *ready) orgs() []string { return r.turn }

// take removes and returns every waiting message that which selects.
func (r *ready) take(which func(waiting) bool) []waiting {
	var out []waiting
	turn := r.turn[:0]
	for _, org := range r.turn {
		kept := r.queues[org][:0]
		for _, w := range r.queues[org] {
			if which(w) {
				out = append(out, w)
			} else {
				kept = append(kept, w)
			}
		}
		if len(kept) == 0 {
			delete(r.queues, org)
			continue
		}
		r.queues[org] = kept
		turn = append(turn, org)
	}
	r.turn = turn
	r.n -= len(out)
	return out
}

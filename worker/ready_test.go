package worker

import (
	"slices"
	"testing"

	"github.com/intakehq/intake"
)

func waitingOf(org, id string) waiting {
	return waiting{claim: intake.Claim{Message: intake.Message{ID: id, OrgID: org}}}
}

// popAll pops until nothing is left that held lets start, and lists the
// messages in the order they came.
func popAll(r *ready, held func(string) bool) []string {
	var got []string
	for w, ok := r.pop(held); ok; w, ok = r.pop(held) {
		got = append(got, w.claim.Message.ID)
	}
	return got
}

// TestTheReadyQueueGivesAnOrgWithABacklogOneStartATurn guards the round
// robin of the worker's ready queue: an org that starts one message goes to
// the back of the turn, backlog or not, so the orgs queued behind it start
// theirs before its second.
func TestTheReadyQueueGivesAnOrgWithABacklogOneStartATurn(t *testing.T) {
	var r ready
	for _, w := range []waiting{waitingOf("b", "b1"), waitingOf("b", "b2"), waitingOf("b", "b3"),
		waitingOf("a", "a1"), waitingOf("c", "c1"), waitingOf("a", "a2")} {
		r.push(w)
	}
	got := popAll(&r, nil)
	if want := []string{"b1", "a1", "c1", "b2", "a2", "b3"}; !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v: one message an org a turn", got, want)
	}
	if r.len() != 0 || len(r.orgs()) != 0 {
		t.Fatalf("%d waiting, orgs %v after every message started", r.len(), r.orgs())
	}
}

// TestAHeldOrgKeepsItsPlaceInTheReadyQueue guards the other half of the
// turn: an org whose messages wait (owing events, or at its limit) is
// passed over without losing its place, and is first once it may start.
func TestAHeldOrgKeepsItsPlaceInTheReadyQueue(t *testing.T) {
	var r ready
	for _, w := range []waiting{waitingOf("a", "a1"), waitingOf("a", "a2"), waitingOf("b", "b1"), waitingOf("b", "b2")} {
		r.push(w)
	}
	if got := popAll(&r, func(org string) bool { return org == "a" }); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("started %v while a was held, want b's two", got)
	}
	r.push(waitingOf("c", "c1"))
	if got := popAll(&r, nil); !slices.Equal(got, []string{"a1", "c1", "a2"}) {
		t.Fatalf("started %v once a may start, want a1, c1, a2", got)
	}
}

package intake_test

import (
	"testing"

	"github.com/intakehq/intake"
)

func TestPageLimitDefaultsAndCaps(t *testing.T) {
	for n, want := range map[int]int{-1: 50, 0: 50, 1: 1, 500: 500, 501: 500} {
		if got := intake.PageLimit(n); got != want {
			t.Errorf("PageLimit(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestRerouteFollowsTheTransitionTableAndStartsAFreshBudget(t *testing.T) {
	for _, st := range intake.EventStates {
		max, err := intake.Reroute(st, 7)
		allowed := intake.CheckEventTransition(st, intake.EventPending) == nil
		switch {
		case allowed && (err != nil || max != 7+intake.DefaultMaxAttempts):
			t.Errorf("re-route of %s: %d %v", st, max, err)
		case !allowed && intake.ErrorCode(err) != intake.ECONFLICT:
			t.Errorf("re-route of %s: %v, want conflict", st, err)
		}
	}
}

package intake

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestARateLaneGivesItsBurstThenTheRate(t *testing.T) {
	var l Lane
	c := Controls{RatePerSec: 10}
	if n, _ := l.Allow(c, t0, 0, 100); n != 10 {
		t.Fatalf("first claim: %d calls, want the 1 s burst of 10", n)
	}
	if n, _ := l.Allow(c, t0, 0, 100); n != 0 {
		t.Fatalf("same instant: %d calls, want 0", n)
	}
	total := 0
	for i := 1; i <= 30; i++ { // 3 s in steps of 100 ms
		n, _ := l.Allow(c, t0.Add(time.Duration(i)*100*time.Millisecond), 0, 100)
		total += n
	}
	if total < 29 || total > 30 {
		t.Fatalf("3 s at 10/s allowed %d calls, want 30", total)
	}
}

func TestMaxInFlightCapsWhatALaneAllows(t *testing.T) {
	var l Lane
	c := Controls{MaxInFlight: 3}
	if n, _ := l.Allow(c, t0, 1, 10); n != 2 {
		t.Fatalf("with 1 in flight of 3: %d, want 2", n)
	}
	if n, _ := l.Allow(c, t0, 3, 10); n != 0 {
		t.Fatalf("at the cap: %d, want 0", n)
	}
}

func TestAPausedLaneAllowsNothing(t *testing.T) {
	var l Lane
	if n, _ := l.Allow(Controls{Paused: true}, t0, 0, 10); n != 0 {
		t.Fatalf("paused: %d calls", n)
	}
}

func TestTheBreakerTripsProbesDoublingAndRecovers(t *testing.T) {
	var l Lane
	c := Controls{}
	now := t0
	for i := 1; i < DefaultBreakerFailures; i++ {
		if ch := l.Settle(c, now, false); ch != "" {
			t.Fatalf("failure %d changed the lane: %s", i, ch)
		}
	}
	if ch := l.Settle(c, now, false); ch != LaneTripped || !l.Tripped {
		t.Fatalf("10th failure: %q, tripped %v", ch, l.Tripped)
	}
	if n, _ := l.Allow(c, now.Add(29*time.Second), 0, 10); n != 0 {
		t.Fatalf("before the first probe: %d calls", n)
	}
	var probes []time.Duration
	for at := now; at.Before(now.Add(10 * time.Minute)); at = at.Add(time.Second) {
		n, probe := l.Allow(c, at, 0, 10)
		if n > 0 {
			if n != 1 || !probe {
				t.Fatalf("tripped lane allowed %d (probe %v)", n, probe)
			}
			probes = append(probes, at.Sub(now))
			l.Settle(c, at, false)
		}
	}
	want := []time.Duration{30 * time.Second, 90 * time.Second, 210 * time.Second, 450 * time.Second}
	if len(probes) != len(want) {
		t.Fatalf("probes at %v, want %v", probes, want)
	}
	for i := range want {
		if probes[i] != want[i] {
			t.Fatalf("probes at %v, want %v", probes, want)
		}
	}
	if n, _ := l.Allow(c, l.ProbeAt, 1, 10); n != 0 {
		t.Fatal("a probe was allowed while another call was in flight")
	}
	if ch := l.Settle(c, now.Add(time.Hour), true); ch != LaneRecovered || l.Tripped || l.Failures != 0 {
		t.Fatalf("success: %q, lane %+v", ch, l)
	}
	if n, _ := l.Allow(c, now.Add(time.Hour), 0, 10); n != 10 {
		t.Fatalf("recovered lane allowed %d, want 10", n)
	}
}

func TestProbesStopDoublingAtThirtyMinutes(t *testing.T) {
	l := Lane{Tripped: true, ProbeEvery: 20 * time.Minute, ProbeAt: t0}
	l.Allow(Controls{}, t0, 0, 1)
	if l.ProbeEvery != BreakerMaxProbe {
		t.Fatalf("probe wait %s, want %s", l.ProbeEvery, BreakerMaxProbe)
	}
}

func TestFailingForTheAutoDisableTimeDisables(t *testing.T) {
	var l Lane
	c := Controls{AutoDisableAfter: 2 * time.Hour}
	l.Settle(c, t0, false)
	if ch := l.Settle(c, t0.Add(2*time.Hour-time.Second), false); ch == LaneDisabled {
		t.Fatal("disabled before the time was up")
	}
	if ch := l.Settle(c, t0.Add(2*time.Hour), false); ch != LaneDisabled {
		t.Fatalf("after 2 h of failure: %q, want %s", ch, LaneDisabled)
	}
	var fresh Lane
	fresh.Settle(c, t0, false)
	fresh.Settle(c, t0.Add(time.Hour), true)
	if ch := fresh.Settle(c, t0.Add(3*time.Hour), false); ch == LaneDisabled {
		t.Fatal("a success in between did not reset the failing time")
	}
}

func TestAnEventsStateFollowsItsRoutes(t *testing.T) {
	for _, tc := range []struct {
		n    RouteCounts
		want EventState
	}{
		{RouteCounts{Total: 2, Waiting: 2}, EventPending},
		{RouteCounts{Total: 2, Waiting: 1, Failed: 1}, EventRetrying},
		{RouteCounts{Total: 2}, EventDelivered},
		{RouteCounts{Total: 2, Dead: 1}, EventDead},
		{RouteCounts{Total: 2, Filtered: 2}, EventFiltered},
		{RouteCounts{Total: 2, Filtered: 1}, EventDelivered},
		{RouteCounts{Total: 2, Dropped: 2}, EventNoConsumer},
		{RouteCounts{}, EventNoConsumer},
	} {
		if got := EventAfterRoutes(tc.n); got != tc.want {
			t.Errorf("%+v → %s, want %s", tc.n, got, tc.want)
		}
	}
	if err := CheckEventPath(EventPending, EventDead); err != nil {
		t.Errorf("pending → dead through retrying: %v", err)
	}
	if err := CheckEventPath(EventDelivered, EventRetrying); err == nil {
		t.Error("delivered → retrying was allowed")
	}
}

// TestEachSettleStepOfTheEventTableIsAPathOfItsTransitions: a settle
// step stays where a waiting event is, or is two transitions through its
// via.
func TestEachSettleStepOfTheEventTableIsAPathOfItsTransitions(t *testing.T) {
	steps := 0
	for from, to := range eventTransitions {
		for _, s := range to {
			if !s.settle {
				if s.via != "" {
					t.Errorf("%s → %s: a transition names a via", from, s.to)
				}
				continue
			}
			steps++
			switch {
			case s.via == "":
				if s.to != from || (from != EventPending && from != EventRetrying) {
					t.Errorf("%s → %s: a settle step without a via must leave a waiting event where it was", from, s.to)
				}
			case CheckEventTransition(from, s.via) != nil || CheckEventTransition(s.via, s.to) != nil:
				t.Errorf("%s → %s is no path through %s", from, s.to, s.via)
			}
		}
	}
	if steps != 2 {
		t.Fatalf("%d settle steps, want pending → pending and pending → dead", steps)
	}
}

func TestControlsRefuseWhatCannotBeMeant(t *testing.T) {
	for _, c := range []Controls{
		{RatePerSec: -1}, {RatePerSec: 1e9}, {MaxInFlight: -1}, {Retry: RetryPolicy{Attempts: 500}},
		{AutoDisableAfter: time.Minute}, {BreakerFailures: -3},
	} {
		if err := c.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("%+v: %v, want EINVALID", c, err)
		}
	}
	if err := (Controls{RatePerSec: 50, MaxInFlight: 1, Ordering: "subject", Retry: RetryPolicy{Attempts: 3, Base: time.Second}}).Validate(); err != nil {
		t.Errorf("a sound set of controls: %v", err)
	}
}

func TestAnAttemptReadsOneWayAgainstTheLimitItCountedToward(t *testing.T) {
	for _, c := range []struct {
		attempt, max int
		want         string
	}{{3, 6, "3 of 6"}, {3, 3, "3 of 3"}, {3, 0, "3"}, {0, 6, "0 of 6"}} {
		if got := AttemptOf(c.attempt, c.max); got != c.want {
			t.Errorf("AttemptOf(%d, %d) = %q, want %q", c.attempt, c.max, got, c.want)
		}
	}
	// A dead route keeps the limit it died under; a waiting one counts
	// toward the consumer's limit now.
	dead := Route{State: RouteDead, Attempt: 3}
	waiting := Route{State: RouteWaiting, Attempt: 3}
	if dead.MaxAttempts(6) != 3 || waiting.MaxAttempts(6) != 6 || waiting.MaxAttempts(0) != 0 {
		t.Fatalf("dead %d, waiting %d, deleted %d", dead.MaxAttempts(6), waiting.MaxAttempts(6), waiting.MaxAttempts(0))
	}
}

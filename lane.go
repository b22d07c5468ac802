package intake

import "time"

// Lane is a consumer's delivery state shared by every process: its rate
// tokens and its circuit breaker.
type Lane struct {
	ConsumerID string
	OrgID      string
	Tokens     float64
	RefilledAt time.Time
	// Failures counts consecutive failed calls; FailingSince is when the
	// first of them failed.
	Failures     int
	FailingSince time.Time
	Tripped      bool
	// ProbeAt is when a tripped breaker lets one call through; the wait
	// after it is ProbeEvery, doubling up to BreakerMaxProbe.
	ProbeAt    time.Time
	ProbeEvery time.Duration
}

// Allow returns how many of want calls the lane lets through at now with
// inFlight calls already made and not settled, and whether the one call it
// allows is the tripped breaker's probe. It takes the tokens and, for a
// probe, schedules the next one; the caller saves the lane.
func (l *Lane) Allow(c Controls, now time.Time, inFlight, want int) (n int, probe bool) {
	if c.Paused || want <= 0 {
		return 0, false
	}
	if l.Tripped {
		if now.Before(l.ProbeAt) || inFlight > 0 {
			return 0, false
		}
		l.ProbeEvery = min(max(l.ProbeEvery*2, BreakerFirstProbe), BreakerMaxProbe)
		l.ProbeAt = now.Add(l.ProbeEvery)
		want, probe = 1, true
	}
	if c.MaxInFlight > 0 {
		want = min(want, c.MaxInFlight-inFlight)
	}
	if c.RatePerSec > 0 {
		burst := max(1, c.RatePerSec)
		// RefilledAt only moves forward: a process whose clock is behind
		// the last claimer's refills nothing, rather than letting the next
		// claim refill the same time twice.
		if l.RefilledAt.IsZero() {
			l.Tokens, l.RefilledAt = burst, now
		} else if el := now.Sub(l.RefilledAt); el > 0 {
			l.Tokens, l.RefilledAt = min(burst, l.Tokens+el.Seconds()*c.RatePerSec), now
		}
		want = min(want, int(l.Tokens))
		if want > 0 {
			l.Tokens -= float64(want)
		}
	}
	if want <= 0 {
		return 0, false
	}
	return want, probe
}

// same reports whether l and o hold the same state.
func (l Lane) same(o Lane) bool {
	return l.ConsumerID == o.ConsumerID && l.OrgID == o.OrgID && l.Tokens == o.Tokens && l.RefilledAt.Equal(o.RefilledAt) &&
		l.Failures == o.Failures && l.FailingSince.Equal(o.FailingSince) && l.Tripped == o.Tripped &&
		l.ProbeAt.Equal(o.ProbeAt) && l.ProbeEvery == o.ProbeEvery
}

// Lane changes a settled call can bring, each audited and notified.
const (
	LaneTripped   = "consumer.tripped"
	LaneRecovered = "consumer.recovered"
	LaneDisabled  = "consumer.disabled"
)

// Settle moves the lane after a call: a success closes the breaker; a
// failure counts toward tripping it and toward disabling the consumer. It
// returns the change (one of the Lane… names, or "").
func (l *Lane) Settle(c Controls, now time.Time, succeeded bool) string {
	if succeeded {
		was := l.Tripped
		l.Failures, l.FailingSince, l.Tripped, l.ProbeAt, l.ProbeEvery = 0, time.Time{}, false, time.Time{}, 0
		if was {
			return LaneRecovered
		}
		return ""
	}
	l.Failures++
	if l.FailingSince.IsZero() {
		l.FailingSince = now
	}
	if !now.Before(l.FailingSince.Add(c.autoDisableAfter())) {
		return LaneDisabled
	}
	if !l.Tripped && l.Failures >= c.breakerFailures() {
		l.Tripped, l.ProbeEvery, l.ProbeAt = true, BreakerFirstProbe, now.Add(BreakerFirstProbe)
		return LaneTripped
	}
	return ""
}

package intake

import (
	"context"
	"time"
)

// A route is one event's way to one consumer. When the router first takes
// an event it selects the consumers and writes a route for each (its
// fan-out); from then on every consumer advances on its own: its own
// attempts, its own retry schedule, its pause, rate, concurrency limit,
// ordering and circuit breaker. A consumer that is down or slow holds up
// only its own routes. The event's state follows from its routes.

// RouteState is where an event stands toward one consumer.
type RouteState string

// Route states.
const (
	// RouteWaiting: due at NextAt, or leased while a call is made. A
	// paused or tripped consumer's routes wait without spending attempts.
	RouteWaiting RouteState = "waiting"
	RouteHandled RouteState = "handled"
	RouteIgnored RouteState = "ignored"
	// RouteFiltered: the consumer's filter declined the event, or its
	// transform skipped it.
	RouteFiltered RouteState = "filtered"
	// RouteDead: the consumer's attempts are spent.
	RouteDead RouteState = "dead"
	// RouteDropped: the consumer was disabled or deleted (or answered
	// 410 Gone) before the event reached it.
	RouteDropped RouteState = "dropped"
)

// RouteLeaseExpired is the last error of a route whose call's lease ran
// out before it settled (its process stopped, or the call outlived the
// lease): that call counts as failed, and the route is claimed as its next
// attempt.
const RouteLeaseExpired = "lease_expired: the call did not settle before its lease ran out"

// Done reports whether the route is settled for good.
func (s RouteState) Done() bool { return s != RouteWaiting }

// Route is one event's progress toward one consumer.
type Route struct {
	OrgID      string
	EventID    string
	ConsumerID string
	State      RouteState
	// Attempt counts the calls that spent the consumer's retry budget.
	Attempt int
	NextAt  time.Time
	// OrderKey groups the routes a consumer with ordering receives one
	// after another ("" for none); OrderAt (the event's occurred_at, then
	// its id) orders them.
	OrderKey  string
	OrderAt   time.Time
	LastError string
	// LeaseUntil is when the lease of the call being made ends (zero: no
	// call is).
	LeaseUntil time.Time
}

// RetryPolicy is a consumer's own retry schedule; zero fields take the
// server's.
type RetryPolicy struct {
	Attempts int
	Base     time.Duration
}

// OrderingSubject is the ordering that keys a consumer's events by the
// provider object they are about (its connection and first object id).
const OrderingSubject = "subject"

// Consumer control defaults and bounds (DESIGN §9).
const (
	DefaultBreakerFailures  = 10
	DefaultAutoDisableAfter = 72 * time.Hour
	BreakerFirstProbe       = 30 * time.Second
	BreakerMaxProbe         = 30 * time.Minute
	MaxRatePerSec           = 10000
	MaxInFlightLimit        = 10000
	MaxRetryAttempts        = 50
)

// Controls is how deliveries to a consumer are paced (DESIGN §9).
type Controls struct {
	Paused bool
	// RatePerSec caps calls per second across all processes; 0: no cap.
	RatePerSec float64
	// MaxInFlight caps calls in flight across all processes (1: one at a
	// time); 0: no cap.
	MaxInFlight int
	// Ordering is "", "subject" or a CEL expression giving a key: for one
	// key the consumer receives an event only after the earlier ones were
	// handled, ignored, filtered or dead for it.
	Ordering string
	Retry    RetryPolicy
	// BreakerFailures consecutive failed calls trip the breaker; 0: the
	// default (10).
	BreakerFailures int
	// AutoDisableAfter of failing continuously disables the consumer; 0:
	// the default (72 h).
	AutoDisableAfter time.Duration
}

// Validate checks the controls; ordering expressions are checked by the
// rules engine, not here.
func (c Controls) Validate() error {
	switch {
	case c.RatePerSec < 0 || c.RatePerSec > MaxRatePerSec || c.RatePerSec != c.RatePerSec:
		return Errorf(EINVALID, "rate_per_sec must be between 0 (no limit) and %d", MaxRatePerSec)
	case c.MaxInFlight < 0 || c.MaxInFlight > MaxInFlightLimit:
		return Errorf(EINVALID, "max_in_flight must be between 1 and %d", MaxInFlightLimit)
	case c.Retry.Attempts < 0 || c.Retry.Attempts > MaxRetryAttempts:
		return Errorf(EINVALID, "retry.attempts must be between 1 and %d", MaxRetryAttempts)
	case c.Retry.Base < 0 || c.Retry.Base > 24*time.Hour:
		return Errorf(EINVALID, "retry.base must be between 1ms and 24h")
	case c.BreakerFailures < 0 || c.BreakerFailures > 1000:
		return Errorf(EINVALID, "breaker_failures must be between 1 and 1000")
	case c.AutoDisableAfter < 0 || (c.AutoDisableAfter > 0 && c.AutoDisableAfter < time.Hour) || c.AutoDisableAfter > 90*24*time.Hour:
		return Errorf(EINVALID, "auto_disable_after must be between 1h and 90 days")
	}
	return nil
}

// Unpaced reports whether nothing holds this consumer's calls back, so a
// route to it can be leased in the commit that creates it.
func (c Controls) Unpaced() bool {
	return !c.Paused && c.RatePerSec == 0 && c.MaxInFlight == 0 && c.Ordering == ""
}

// Attempts returns the consumer's retry budget.
func (c Controls) Attempts() int {
	if c.Retry.Attempts > 0 {
		return c.Retry.Attempts
	}
	return DefaultMaxAttempts
}

// Backoff returns the consumer's schedule: the server's with the
// consumer's base when it sets one.
func (c Controls) Backoff(server Backoff) Backoff {
	if c.Retry.Base > 0 {
		server.Base = c.Retry.Base
	}
	return server
}

func (c Controls) breakerFailures() int {
	if c.BreakerFailures > 0 {
		return c.BreakerFailures
	}
	return DefaultBreakerFailures
}

func (c Controls) autoDisableAfter() time.Duration {
	if c.AutoDisableAfter > 0 {
		return c.AutoDisableAfter
	}
	return DefaultAutoDisableAfter
}

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

// RouteClaim is one call to be made: a route leased to the caller.
type RouteClaim struct {
	Event      Event
	ConsumerID string
	// Attempt is the number this call has if it fails (the route's spent
	// attempts + 1).
	Attempt int
	// Probe marks the tripped breaker's trial call: its failure spends no
	// attempt.
	Probe      bool
	LeaseUntil time.Time
}

// RouteQueue is the router's view of routes.
type RouteQueue interface {
	// FanOut writes an event's routes as DecideFanOut decides them (a
	// re-routed event keeps the routes it finished), with the filtered and
	// held routes' records, and moves the event off the event queue to the
	// state they give it. ESTALE unless the event is leased at f.Attempt.
	// It returns the decision: the event's state and the calls leased (see
	// FanOut.Lease).
	FanOut(ctx context.Context, now time.Time, f FanOut) (FannedOut, error)
	// ClaimRoutes leases due routes of consumers that are not paused, as
	// many as the caller's shares allow (in all, per org and per
	// consumer), each consumer's share allowed by its lane (rate, max in
	// flight, breaker) and, for a consumer with ordering, only the first
	// waiting route of each key. Routes of disabled or deleted consumers
	// are claimed too, so they can be dropped.
	ClaimRoutes(ctx context.Context, now time.Time, lease time.Duration, shares CallShares) ([]RouteClaim, error)
	// SettleRoute applies one call's result (DecideRouteSettlements) in
	// one transaction; ESTALE unless the route is leased at s.Attempt.
	SettleRoute(ctx context.Context, now time.Time, s RouteSettlement, b Backoff) error
}

// RouteCounts is how an event's routes stand. Failed counts the waiting
// routes that have a failed call behind them (a last error).
type RouteCounts struct {
	Total, Waiting, Failed, Filtered, Dead, Dropped int
}

// EventAfterRoutes returns the event's state once its routes stand as n:
// waiting routes keep it pending, or retrying once one of them failed;
// when all are done: every one filtered → filtered; any dead → dead; every
// one dropped → no_consumer; else delivered.
func EventAfterRoutes(n RouteCounts) EventState {
	switch {
	case n.Waiting > 0 && n.Failed > 0:
		return EventRetrying
	case n.Waiting > 0:
		return EventPending
	case n.Total == 0 || n.Dropped == n.Total:
		return EventNoConsumer
	case n.Filtered == n.Total:
		return EventFiltered
	case n.Dead > 0:
		return EventDead
	}
	return EventDelivered
}

// CheckEventPath is CheckEventTransition for a settle that may pass
// through retrying on its way (pending → dead: the first failure was also
// the last).
func CheckEventPath(from, to EventState) error {
	if from == to && (from == EventPending || from == EventRetrying) {
		return nil
	}
	if from == EventPending && to == EventDead {
		return CheckEventTransition(EventRetrying, EventDead)
	}
	return CheckEventTransition(from, to)
}

// Notice is an operational notification waiting to be sent (DESIGN §9):
// written in the transaction of the change it reports.
type Notice struct {
	ID      string
	OrgID   string
	Topic   string // message.dead, event.dead, consumer.tripped, …
	Subject string // what it is about: a consumer, event, message or endpoint id
	Detail  string
	At      time.Time
}

// Notification topics.
const (
	NoticeMessageDead       = "message.dead"
	NoticeEventDead         = "event.dead"
	NoticeConsumerTripped   = LaneTripped
	NoticeConsumerRecovered = LaneRecovered
	NoticeConsumerDisabled  = LaneDisabled
	NoticeSignatureFailures = "signature.failures"
	NoticeStorageQuota      = "storage.quota"
)

// NoticeTopics lists every notification topic.
var NoticeTopics = []string{NoticeMessageDead, NoticeEventDead, NoticeConsumerTripped, NoticeConsumerRecovered,
	NoticeConsumerDisabled, NoticeSignatureFailures, NoticeStorageQuota}

// TopicRoutes wakes the routers' delivery loops: routes were written or
// released, or a consumer was resumed.
const TopicRoutes = "routes"

// Consumer states as health reports them.
const (
	ConsumerEnabled  = "enabled"
	ConsumerPaused   = "paused"
	ConsumerTripped  = "tripped"
	ConsumerDisabled = "disabled"
)

// ConsumerHealth is how deliveries to one consumer stand (DESIGN §9).
type ConsumerHealth struct {
	State string // enabled, paused, tripped or disabled
	// Delivered1h and Failed1h count the calls of the last hour that
	// succeeded and failed; P50 and P99 are their latencies.
	Delivered1h, Failed1h int
	P50, P99              time.Duration
	LastStatus            int
	LastError             string
	LastDeliveryAt        time.Time
	// InFlight: calls made and not settled. Held: routes waiting on a
	// pause or an open breaker. Due: routes whose time has come, waiting
	// for a call; OldestDueAt is the earliest of them.
	InFlight, Held, Due int
	OldestDueAt         time.Time
	// Failures is the breaker's count of consecutive failed calls.
	Failures int
}

// Health reads a consumer's delivery health.
type Health interface {
	ConsumerHealth(ctx context.Context, sc Scope, consumerID string, now time.Time) (ConsumerHealth, error)
}

// NotificationSettings is where an org's operational notifications go.
type NotificationSettings struct {
	OrgID          string
	URL            string
	SealedSlackURL []byte
	Topics         []string
	SealedSecret   []byte
	UpdatedAt      time.Time
}

// Notifications keeps where notices go and the notices waiting to be sent.
type Notifications interface {
	PutNotificationSettings(ctx context.Context, sc Scope, s NotificationSettings, audit ...AuditEntry) error
	// NotificationSettings returns the org's settings; ENOTFOUND if it has
	// none.
	NotificationSettings(ctx context.Context, sc Scope, orgID string) (NotificationSettings, error)
	// InsertNotice records a notice outside a settle (ingress, the quota).
	InsertNotice(ctx context.Context, n Notice) error
	// UnsentNotices returns up to limit notices not yet sent, oldest first.
	UnsentNotices(ctx context.Context, limit int) ([]Notice, error)
	// LastSentNotice returns when a notice of (org, topic, subject) was
	// last sent; zero if never.
	LastSentNotice(ctx context.Context, orgID, topic, subject string) (time.Time, error)
	MarkNoticesSent(ctx context.Context, ids []string, at time.Time) error
}

// SetBacklog fills in a consumer's state and backlog from what a store
// counted: its waiting unleased routes, those of them due and the earliest
// due. A paused or tripped consumer's waiting routes are held, not due.
func (h *ConsumerHealth) SetBacklog(enabled, paused, tripped bool, waiting, due int, oldestDue time.Time) {
	switch {
	case !enabled:
		h.State = ConsumerDisabled
	case paused:
		h.State = ConsumerPaused
	case tripped:
		h.State = ConsumerTripped
	default:
		h.State = ConsumerEnabled
	}
	if paused || tripped {
		h.Held = waiting
		return
	}
	h.Due, h.OldestDueAt = due, oldestDue
}

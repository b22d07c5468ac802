package intake

import (
	"context"
	"strconv"
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

// RouteStates lists every route state.
var RouteStates = []RouteState{RouteWaiting, RouteHandled, RouteIgnored, RouteFiltered, RouteDead, RouteDropped}

// RouteLeaseExpired is the last error of a route whose call's lease ran
// out before it settled (its process stopped, or the call outlived the
// lease): that call counts as failed, and the route is claimed as its next
// attempt.
const RouteLeaseExpired = "lease_expired: the call did not settle before its lease ran out"

// routeUnwritten is no state a route is in: it is where a route stands
// before a fan-out writes it, so the table says how a route starts.
const routeUnwritten RouteState = ""

// routeTransitions is the one table every route state write goes through.
// A fan-out writes a route waiting, or filtered when the consumer's filter
// declined the event; a call's settle moves a waiting route on: waiting
// again after a failed call, or to a state it keeps for good. A settled
// route never moves: an operator's re-route deletes the routes that did
// not finish, and its fan-out writes them anew.
var routeTransitions = map[RouteState][]RouteState{
	routeUnwritten: {RouteWaiting, RouteFiltered},
	RouteWaiting:   {RouteWaiting, RouteHandled, RouteIgnored, RouteFiltered, RouteDead, RouteDropped},
}

// CheckRouteTransition returns an EINVALID error unless from → to is in
// the route transition table; from is "" for a route the write creates.
func CheckRouteTransition(from, to RouteState) error {
	for _, t := range routeTransitions[from] {
		if t == to {
			return nil
		}
	}
	if from == routeUnwritten {
		return Errorf(EINVALID, "a route cannot start %s", to)
	}
	return Errorf(EINVALID, "route cannot go from %s to %s", from, to)
}

// Done reports whether the route is settled for good: the table lets it go
// nowhere.
func (s RouteState) Done() bool { return len(routeTransitions[s]) == 0 }

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

// MaxAttempts is the limit r's attempts read against, given its
// consumer's limit now (0: deleted). A dead route spent the limit it died
// under, reached at its last attempt, so a later change of the consumer's
// retry leaves it as it was; any other counts toward the limit now.
func (r Route) MaxAttempts(limit int) int {
	if r.State == RouteDead {
		return r.Attempt
	}
	return limit
}

// AttemptOf is how an attempt reads wherever one is shown: "3 of 6"
// against the limit it counted toward, "3" when none was recorded (a
// delivery from before limits were kept, a deleted consumer's route).
func AttemptOf(attempt, max int) string {
	if max <= 0 {
		return strconv.Itoa(attempt)
	}
	return strconv.Itoa(attempt) + " of " + strconv.Itoa(max)
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
	// OrderKey is the route's ordering key ("" for none), for the
	// destinations that keep order by it (a Kafka record's key).
	OrderKey string
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
	// one transaction, returning the call's outcome as recorded ("dead"
	// when it spent the last attempt; "" without a delivery); ESTALE
	// unless the route is leased at s.Attempt.
	SettleRoute(ctx context.Context, now time.Time, s RouteSettlement, b Backoff) (recorded string, err error)
	// ReleaseRoute hands back the lease of a call that was not made: from
	// at on the route is claimed again as the same attempt, and the
	// release spends none of its attempts (a lease left to run out
	// would). Nothing happens unless the route is leased at attempt.
	ReleaseRoute(ctx context.Context, at time.Time, eventID, consumerID string, attempt int) error
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

// TopicRoutes wakes the routers' delivery loops: routes were written or
// released, or a consumer was resumed.
const TopicRoutes = "routes"

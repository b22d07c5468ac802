package intake

import (
	"strings"
	"time"
)

// FanOutRoute is one selected consumer in a fan-out.
type FanOutRoute struct {
	ConsumerID string
	// Filtered: the consumer's filter declined the event; the route is
	// written settled, with Delivery as its record.
	Filtered bool
	// Delivery is the record written with the route when no call is made
	// for it now: filtered, or held for a paused consumer.
	Delivery *Delivery
	OrderKey string
	// Unleased keeps the route from being leased with the fan-out even to a
	// consumer nothing paces: the caller holds no call slot for it (its
	// share had none left, or the consumer was paced as the caller read
	// it), so it waits for a claim.
	Unleased bool
}

// FanOut is an event's consumers as judged before anything is written:
// the route of each selected consumer, its filter's verdict and ordering
// key (fanout.Judger). The router has it judged for an event it claimed;
// the worker has it judged before the settle that creates the event, and
// passes it in the settlement.
type FanOut struct {
	EventID string
	Attempt int // the event claim's attempt
	Routes  []FanOutRoute
	// Lease is how long routes to unpaced consumers whose breaker is closed
	// are leased to the caller in the same commit, which then makes their
	// first call without a claim; 0: none are.
	Lease time.Duration
}

// ConsumerLane is a consumer as settles and fan-outs read it: whether it
// takes calls, how they are paced, and its shared lane. A consumer that
// was deleted is not read at all.
type ConsumerLane struct {
	Enabled  bool
	Controls Controls
	Lane     Lane
}

// leaseable reports whether a new route to c may be leased in the commit
// that writes it: c is enabled, nothing paces it and its breaker is closed.
func (c ConsumerLane) leaseable() bool {
	return c.Enabled && c.Controls.Unpaced() && !c.Lane.Tripped
}

// FanOutRead is what a store reads to write one event's fan-out.
type FanOutRead struct {
	// Event is the event as it stands; for a settle, as it is created.
	Event Event
	// Leased: the event is leased to a fan-out (always, for a settle's).
	Leased bool
	// Routed are the consumers that have a route already (a re-routed
	// event keeps the routes it finished), and Counts how those stand.
	Routed map[string]bool
	Counts RouteCounts
	// Consumers are the fan-out's consumers, as they stand.
	Consumers map[string]ConsumerLane
	// Issues are the fan-out's consumers' rule issues, in any status;
	// ConsumerNames their names.
	Issues        []Issue
	ConsumerNames map[string]string
	// book decides the issues instead, for a settle that writes the
	// fan-outs of many events.
	book *issueBook
}

// FannedOut is a fan-out decided: the rows to write and where it leaves
// the event.
type FannedOut struct {
	// Routes are the new routes, those leased with their LeaseUntil;
	// Deliveries the records of the routes that carry one.
	Routes     []Route
	Deliveries []Delivery
	// State is the event's state once the routes are written.
	State EventState
	// Calls are the routes leased to the caller: their first calls.
	Calls []RouteClaim
	// Wake: a route waits, unleased, for a delivery claim.
	Wake bool
	// Issues are the rule issues the filters' errors opened or counted,
	// and those a filter that ran again resolved; IssueItems the events
	// they touched; Notices the issues' notices.
	Issues     []IssueWrite
	IssueItems []IssueItem
	Notices    []Notice
}

// DecideFanOut is the one place a fan-out becomes rows, whether the
// router writes it on its claim of the event or a settle writes it with
// the event it creates: a route per consumer not yet routed, leased when
// the caller holds a call slot for it and nothing holds its consumer back,
// and the event's state as its routes leave it. ESTALE unless the event
// is leased at f.Attempt and waits for its fan-out.
func DecideFanOut(in FanOutRead, f FanOut, now time.Time) (FannedOut, error) {
	e := in.Event
	if !in.Leased || e.Attempt != f.Attempt || (e.State != EventPending && e.State != EventRetrying) {
		return FannedOut{}, Errorf(ESTALE, "fan-out %d of event %s is not current", f.Attempt, f.EventID)
	}
	orderAt := e.OccurredAt
	if orderAt.IsZero() {
		orderAt = e.ReceivedAt
	}
	var out FannedOut
	n := in.Counts
	for _, fr := range f.Routes {
		if in.Routed[fr.ConsumerID] {
			continue
		}
		r := Route{OrgID: e.OrgID, EventID: e.ID, ConsumerID: fr.ConsumerID, State: RouteWaiting, NextAt: now,
			OrderKey: fr.OrderKey, OrderAt: orderAt}
		n.Total++
		c, found := in.Consumers[fr.ConsumerID]
		switch {
		case fr.Filtered:
			r.State = RouteFiltered
			n.Filtered++
		case f.Lease > 0 && !fr.Unleased && found && c.leaseable():
			r.LeaseUntil = now.Add(f.Lease)
			n.Waiting++
			out.Calls = append(out.Calls, RouteClaim{ConsumerID: r.ConsumerID, Attempt: 1, LeaseUntil: r.LeaseUntil, OrderKey: r.OrderKey})
		default:
			n.Waiting++
			out.Wake = true
		}
		if err := CheckRouteTransition(routeUnwritten, r.State); err != nil {
			return FannedOut{}, err
		}
		out.Routes = append(out.Routes, r)
		if fr.Delivery != nil {
			out.Deliveries = append(out.Deliveries, *fr.Delivery)
		}
	}
	// While routes wait, they move the event from here on; it leaves the
	// event queue either way.
	out.State = EventAfterRoutes(n)
	if out.State == EventPending || out.State == EventRetrying {
		out.State = e.State
	}
	if err := CheckEventPath(e.State, out.State); err != nil {
		return FannedOut{}, err
	}
	e.State, e.NextAttemptAt = out.State, time.Time{}
	for i := range out.Calls {
		out.Calls[i].Event = e
	}
	b := in.book
	if b == nil {
		b = newIssueBook(in.Issues, nil)
	}
	decideFilterIssues(b, in, f, now)
	if in.book == nil {
		out.Issues, out.IssueItems, out.Notices = b.writes, b.added, b.notices
	}
	return out, nil
}

// decideFilterIssues counts each filter that failed on the event under its
// consumer's rule issue; a filter that ran resolves it.
func decideFilterIssues(b *issueBook, in FanOutRead, f FanOut, now time.Time) {
	e := in.Event
	for _, fr := range f.Routes {
		if in.Routed[fr.ConsumerID] {
			continue
		}
		name := in.ConsumerNames[fr.ConsumerID]
		if fr.Delivery != nil && strings.HasPrefix(fr.Delivery.Error, FilterErrorPrefix) {
			b.fail(issueFailure{OrgID: e.OrgID, SubjectID: fr.ConsumerID, SubjectName: name, Kind: IssueRule, Cause: CauseFilterError,
				Error: fr.Delivery.Error, EventID: e.ID, At: now})
			continue
		}
		b.succeed(e.OrgID, IssueRule, fr.ConsumerID, name, now, CauseFilterError)
	}
}

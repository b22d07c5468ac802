package intake

import (
	"strconv"
	"time"
)

// A call's result settles as a processing result does: the store reads
// what a batch of results needs (RouteSettleRead), DecideRouteSettlements
// decides, and the store writes the decision, one statement per kind of
// row.

// RouteSettlement is the result of one leased call.
type RouteSettlement struct {
	EventID    string
	ConsumerID string
	Attempt    int
	Probe      bool
	// Delivery is the call's record; nil when no call was made (the
	// consumer was disabled or deleted: the route is dropped).
	Delivery *Delivery
	// Called: a request reached (or was tried against) the consumer, so
	// the result counts for its breaker. A transform error makes no call.
	Called     bool
	RetryAfter time.Duration
	// Gone: the consumer answered 410 Gone; it is disabled and the route
	// dropped.
	Gone bool
}

// TimedRouteSettlement is a call's result with the time it settles at and
// the server's retry schedule.
type TimedRouteSettlement struct {
	Now     time.Time
	Backoff Backoff
	RouteSettlement
}

// RouteKey names a route.
type RouteKey struct{ EventID, ConsumerID string }

// RouteSettleRead is what a store reads for a batch of call results.
type RouteSettleRead struct {
	// Events are the states of the results' events (absent: deleted).
	Events map[string]EventState
	// Routes are the results' routes (absent: none); a leased route has
	// its LeaseUntil.
	Routes map[RouteKey]Route
	// Counts are how each event's routes stand.
	Counts map[string]RouteCounts
	// Consumers are the results' consumers (absent: deleted).
	Consumers map[string]ConsumerLane
	// ConsumerNames are the results' consumers' names, for their issues.
	ConsumerNames map[string]string
	// Issues are the results' consumers' delivery and rule issues, in any
	// status; IssueItems which of the results' events they hold already.
	Issues     []Issue
	IssueItems map[IssueItemKey]bool
}

// RouteSettleKeys are the rows a store reads for a batch of call results:
// each event, consumer and route once, in the batch's order.
type RouteSettleKeys struct {
	Events, Consumers []string
	Routes            []RouteKey
}

// RouteKeysOf lists what a batch of call results needs read.
func RouteKeysOf(batch []TimedRouteSettlement) RouteSettleKeys {
	var k RouteSettleKeys
	events, consumers, routes := map[string]bool{}, map[string]bool{}, map[RouteKey]bool{}
	for _, r := range batch {
		if !events[r.EventID] {
			events[r.EventID] = true
			k.Events = append(k.Events, r.EventID)
		}
		if !consumers[r.ConsumerID] {
			consumers[r.ConsumerID] = true
			k.Consumers = append(k.Consumers, r.ConsumerID)
		}
		if rk := (RouteKey{r.EventID, r.ConsumerID}); !routes[rk] {
			routes[rk] = true
			k.Routes = append(k.Routes, rk)
		}
	}
	return k
}

// EventMove is an event moved by the settle of one of its routes.
type EventMove struct {
	EventID string
	State   EventState
}

// RouteSettleDecision is what a batch of call results writes.
type RouteSettleDecision struct {
	// Errs are each result's refusal (nil: applied), in the batch's order.
	Errs []error
	// Recorded are each applied result's delivery outcome as written
	// ("dead" for the call that spent the last attempt), in the batch's
	// order; "" for a refused result or one without a delivery.
	Recorded []string

	Deliveries []Delivery
	// Routes are the settled routes as they now stand, their leases
	// released; each at most once.
	Routes []Route
	// Events are the events whose state moved, each at most once.
	Events []EventMove
	// Lanes are the lanes that moved, each at most once.
	Lanes []Lane
	// Disables are the consumers to disable, each with its audit entry
	// (TargetID is the consumer), written only if it is enabled still.
	Disables []AuditEntry
	Audit    []AuditEntry
	Notices  []Notice
	// Issues are the issues the results opened, counted, reopened or
	// resolved, each at most once; IssueItems the events they touched.
	Issues     []IssueWrite
	IssueItems []IssueItem
	// WakeRoutes: a released lease may let another call go at once (a
	// max_in_flight slot, the next route of an ordering key, a breaker that
	// closed).
	WakeRoutes bool
}

// DecideRouteSettlements is the one place a call's result becomes state.
// Each result in turn, seeing what those before it decided: a stale call
// is refused; the delivery is recorded; the route moves by the consumer's
// retry schedule and the lane by its breaker, each change audited and
// noticed; the event moves once its routes say so; a failed call counts
// under its consumer's issue of its cause and a success resolves them
// (DESIGN §20).
func DecideRouteSettlements(in RouteSettleRead, batch []TimedRouteSettlement) RouteSettleDecision {
	d := RouteSettleDecision{Errs: make([]error, len(batch)), Recorded: make([]string, len(batch))}
	issues := newIssueBook(in.Issues, in.IssueItems)
	// What the results before have decided, over what was read.
	events, routes, counts, lanes := map[string]EventState{}, map[RouteKey]Route{}, map[string]RouteCounts{}, map[string]ConsumerLane{}
	routeAt, eventAt, laneAt := map[RouteKey]int{}, map[string]int{}, map[string]int{}
	for i, s := range batch {
		k := RouteKey{s.EventID, s.ConsumerID}
		from, ok := events[s.EventID]
		if !ok {
			from, ok = in.Events[s.EventID]
		}
		if !ok {
			d.Errs[i] = Errorf(ENOTFOUND, "event %s not found", s.EventID)
			continue
		}
		r, ok := routes[k]
		if !ok {
			r, ok = in.Routes[k]
		}
		if !ok || r.LeaseUntil.IsZero() || r.State != RouteWaiting || r.Attempt+1 != s.Attempt {
			d.Errs[i] = Errorf(ESTALE, "call %d of event %s to consumer %s is not current", s.Attempt, s.EventID, s.ConsumerID)
			continue
		}
		c, ok := lanes[s.ConsumerID]
		if !ok {
			c, ok = in.Consumers[s.ConsumerID]
		}
		deleted := !ok
		was, laneMoved, laneChange := r, false, ""
		n, ok := counts[s.EventID]
		if !ok {
			n = in.Counts[s.EventID]
		}
		// This result's rows, kept only if it applies.
		var part RouteSettleDecision
		if s.Delivery != nil {
			del := *s.Delivery
			if !deleted {
				// The limit this call counted toward, kept as it was.
				del.MaxAttempts = c.Controls.Attempts()
			}
			part.Deliveries = append(part.Deliveries, del)
		}
		notice := func(topic, detail string) {
			part.Notices = append(part.Notices, Notice{ID: NewID(), OrgID: r.OrgID, Topic: topic, Subject: s.ConsumerID, Detail: detail, At: s.Now.UTC()})
		}
		disable := func(detail string) {
			if deleted || !c.Enabled {
				return
			}
			c.Enabled = false
			part.Disables = append(part.Disables, AuditEntry{ID: NewID(), OrgID: r.OrgID, Actor: "intake", Action: "consumer.disable",
				TargetType: "consumer", TargetID: s.ConsumerID, Detail: detail, At: s.Now.UTC()})
			notice(NoticeConsumerDisabled, detail)
		}
		switch {
		case deleted || s.Delivery == nil:
			r.State, r.LastError = RouteDropped, "the consumer was disabled or deleted before the event reached it"
		case s.Gone:
			r.State, r.LastError = RouteDropped, "the consumer answered 410 Gone: it is disabled"
			disable("the consumer answered 410 Gone to event " + s.EventID)
		default:
			del := s.Delivery
			r.LastError = del.Error
			switch del.Outcome {
			case DeliveryHandled:
				r.State = RouteHandled
			case DeliveryIgnored:
				r.State = RouteIgnored
			case DeliveryFiltered:
				r.State = RouteFiltered
			}
			if r.State.Done() {
				r.Attempt = s.Attempt // the call that finished the route, for display
			}
			tripped := c.Lane.Tripped
			if s.Called {
				before := c.Lane
				change := c.Lane.Settle(c.Controls, s.Now, del.Succeeded())
				laneChange = change
				// Most calls leave the lane as it was (a success on a
				// closed breaker): it is written only when it moved.
				laneMoved = !c.Lane.same(before)
				switch change {
				case LaneDisabled:
					disable("the consumer failed every call for " + c.Controls.autoDisableAfter().String())
				case LaneTripped, LaneRecovered:
					detail := "the circuit breaker opened after " + strconv.Itoa(c.Lane.Failures) + " failed calls in a row; one call is tried every so often"
					if change == LaneRecovered {
						detail = "a call succeeded: the circuit breaker closed"
						part.WakeRoutes = true
					}
					part.Audit = append(part.Audit, AuditEntry{ID: NewID(), OrgID: r.OrgID, Actor: "intake", Action: change, TargetType: "consumer",
						TargetID: s.ConsumerID, Detail: detail, At: s.Now.UTC()})
					notice(change, detail)
				}
			}
			if r.State == RouteWaiting {
				// A failed call. A probe, or a call that failed while the
				// breaker was open, spends no attempt: the route waits for
				// the breaker.
				if s.Probe || tripped || (s.Called && c.Lane.Tripped) {
					r.NextAt = s.Now
				} else {
					r.Attempt = s.Attempt
					if r.Attempt >= c.Controls.Attempts() {
						r.State = RouteDead
						// The call's record says it spent the last attempt.
						if len(part.Deliveries) == 1 && part.Deliveries[0].Outcome == DeliveryRetry {
							part.Deliveries[0].Outcome = DeliveryDead
						}
					} else {
						r.NextAt = s.Now.Add(max(s.RetryAfter, c.Controls.Backoff(s.Backoff).Delay(r.Attempt)))
					}
				}
			}
		}
		r.LeaseUntil = time.Time{}
		if err := CheckRouteTransition(was.State, r.State); err != nil {
			d.Errs[i] = err
			continue
		}
		n = moveCounts(n, was, r)
		to := EventAfterRoutes(n)
		if from == EventRetrying && to == EventPending {
			// A call failed: the event stays retrying until its routes are done.
			to = from
		}
		if to != from {
			if err := CheckEventPath(from, to); err != nil {
				d.Errs[i] = err
				continue
			}
			if to == EventDead {
				// Grouped by the consumer whose call settled the event: a
				// consumer that kills many events is one notice with a
				// count.
				detail := "event " + s.EventID + " is dead: " + r.LastError
				if r.State != RouteDead {
					// This call succeeded; another consumer's route died
					// before it.
					detail = "event " + s.EventID + " is dead: another consumer's attempts are spent"
				}
				notice(NoticeEventDead, detail)
			}
			events[s.EventID] = to
			if j, ok := eventAt[s.EventID]; ok {
				d.Events[j].State = to
			} else {
				eventAt[s.EventID] = len(d.Events)
				d.Events = append(d.Events, EventMove{EventID: s.EventID, State: to})
			}
		}
		// Applied: what it decided is written, and seen by the results
		// after it.
		counts[s.EventID], routes[k] = n, r
		if j, ok := routeAt[k]; ok {
			d.Routes[j] = r
		} else {
			routeAt[k] = len(d.Routes)
			d.Routes = append(d.Routes, r)
		}
		if !deleted {
			lanes[s.ConsumerID] = c
			d.WakeRoutes = d.WakeRoutes || c.Controls.MaxInFlight > 0 || c.Controls.Ordering != ""
		}
		if laneMoved {
			if j, ok := laneAt[s.ConsumerID]; ok {
				d.Lanes[j] = c.Lane
			} else {
				laneAt[s.ConsumerID] = len(d.Lanes)
				d.Lanes = append(d.Lanes, c.Lane)
			}
		}
		if len(part.Deliveries) == 1 {
			d.Recorded[i] = part.Deliveries[0].Outcome
			if !deleted {
				decideCallIssues(issues, r.OrgID, in.ConsumerNames[s.ConsumerID], s, part.Deliveries[0], laneChange)
			}
		}
		d.Deliveries = append(d.Deliveries, part.Deliveries...)
		d.Disables = append(d.Disables, part.Disables...)
		d.Audit = append(d.Audit, part.Audit...)
		d.Notices = append(d.Notices, part.Notices...)
		d.WakeRoutes = d.WakeRoutes || part.WakeRoutes
	}
	d.Issues, d.IssueItems = issues.writes, issues.added
	d.Notices = append(d.Notices, issues.notices...)
	return d
}

// decideCallIssues counts a call's failure under its consumer's issue of
// its cause (a breaker that trips, or a probe that fails, also under
// "tripped"); a success resolves the consumer's delivery issues, and any
// call its transform let through resolves its transform's rule issue.
func decideCallIssues(b *issueBook, orgID, name string, s TimedRouteSettlement, del Delivery, laneChange string) {
	kind, cause := IssueCause(del)
	fail := issueFailure{OrgID: orgID, SubjectID: s.ConsumerID, SubjectName: name, Kind: kind, Cause: cause, Error: del.Error,
		EventID: s.EventID, At: s.Now}
	if del.Failed() {
		b.fail(fail)
		if laneChange == LaneTripped || s.Probe && s.Called {
			fail.Kind, fail.Cause = IssueDelivery, CauseTripped
			b.fail(fail)
		}
	}
	if del.Succeeded() {
		b.succeed(orgID, IssueDelivery, s.ConsumerID, name, s.Now)
	}
	if kind != IssueRule && (s.Called || del.Succeeded()) {
		b.succeed(orgID, IssueRule, s.ConsumerID, name, s.Now, CauseTransformError)
	}
}

// moveCounts is n with one route changed from was to now.
func moveCounts(n RouteCounts, was, now Route) RouteCounts {
	add := func(r Route, d int) {
		switch r.State {
		case RouteWaiting:
			n.Waiting += d
			if r.LastError != "" {
				n.Failed += d
			}
		case RouteFiltered:
			n.Filtered += d
		case RouteDead:
			n.Dead += d
		case RouteDropped:
			n.Dropped += d
		}
	}
	add(was, -1)
	add(now, 1)
	return n
}

package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// A call's result is settled in a transaction of its own, or with the
// results of the calls that finished while the previous settle was
// committing: the settlers take what waits, up to routeSettleBatch, and
// settle it together: read → decide → write (DESIGN §7). They share the
// reads that lock their rows and the statements that write them, so a
// batch costs the statements of one settle whatever it holds;
// intake.DecideRouteSettlements decides each in turn, each seeing what
// those before it decided. A stale result writes nothing and fails alone;
// a batch that would move a lane read unlocked settles again under the
// lanes' locks.

type routeSettleRequest struct {
	now  time.Time
	st   intake.RouteSettlement
	b    intake.Backoff
	done chan routeSettled
}

type routeSettled struct {
	recorded string
	err      error
}

const (
	// routeSettlers is how many batches of call settles may commit at once.
	routeSettlers = 2
	// routeSettleBatch is the most call settles one transaction takes.
	routeSettleBatch = 64
)

// SettleRoute applies one call's result to its route, lane and event in
// one transaction, which it may share with the results of other calls.
func (s *Store) SettleRoute(ctx context.Context, now time.Time, st intake.RouteSettlement, b intake.Backoff) (string, error) {
	if !validIDs(st.EventID, st.ConsumerID) {
		return "", notFound("route", st.EventID+"/"+st.ConsumerID)
	}
	req := routeSettleRequest{now: now, st: st, b: b, done: make(chan routeSettled, 1)}
	if err := s.routeSettles.put(ctx, s.stop, req); err != nil {
		return "", err
	}
	// A caller that stops waiting learns nothing of the outcome; the route
	// is settled or its lease expires, as when a commit's answer is lost.
	var r routeSettled
	select {
	case r = <-req.done:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-s.done:
		s.failQueued()
		r = <-req.done
	}
	return r.recorded, r.err
}

// settleRoutes settles a batch and answers each request. The lanes are
// read unlocked first: calls that leave them as they were (successes on a
// closed breaker) then take no lock that every other call to the consumer
// would queue behind. A batch that would move a lane settles again with
// the lanes locked. If the batch's transaction fails, each result is
// settled alone, so that none fails its neighbours.
func (s *Store) settleRoutes(batch []routeSettleRequest) {
	ctx := context.Background()
	d, err := s.settleRouteBatch(ctx, batch, false)
	if errors.Is(err, errLaneMoved) {
		d, err = s.settleRouteBatch(ctx, batch, true)
	}
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			s.settleRoutes([]routeSettleRequest{r})
		}
		return
	}
	for i, r := range batch {
		if err != nil {
			r.done <- routeSettled{err: err}
			continue
		}
		r.done <- routeSettled{recorded: d.Recorded[i], err: d.Errs[i]}
	}
}

// errLaneMoved refuses a batch that would move a lane read unlocked.
var errLaneMoved = errors.New("a lane moves: settle again with the lanes locked")

// settleRouteBatch settles a batch in one transaction of two round trips:
// the first locks the events and routes and reads the lanes and route
// counts; intake.DecideRouteSettlements decides; the second writes the
// decision and commits. It returns the decision, whose Errs are each
// result's; err is the transaction's.
func (s *Store) settleRouteBatch(ctx context.Context, batch []routeSettleRequest, lockLanes bool) (d intake.RouteSettleDecision, err error) {
	in := make([]intake.TimedRouteSettlement, len(batch))
	for i, r := range batch {
		in[i] = intake.TimedRouteSettlement{Now: r.now, Backoff: r.b, RouteSettlement: r.st}
	}
	err = s.pipeline(ctx, func(p *pipeTx) error {
		forCustomPlans(p.b)
		var at time.Time
		s.queueClock(p.b, &at)
		read := queueCallRead(p.b, in, lockLanes)
		if err := p.flush(ctx); err != nil {
			return err
		}
		d = intake.DecideRouteSettlements(*read, routesTimedAt(in, at))
		// Issues move under the lanes' locks too: the settles of one
		// consumer then decide its issues one after another.
		if (len(d.Lanes) > 0 || len(d.Issues) > 0) && !lockLanes {
			return errLaneMoved
		}
		queueCallWrite(p, d, s)
		return nil
	})
	if err != nil {
		return intake.RouteSettleDecision{}, err
	}
	// Settled calls free this process's call slots, which a claim may take
	// at once; other processes hear only of what d.WakeRoutes names.
	s.hub.Notify(intake.TopicRoutes)
	return d, nil
}

// routesTimedAt is a batch of call results settled at PostgreSQL's clock
// at, read in the settle's transaction: a retry's backoff, a breaker's
// probe and a rate's refill run from it. The zero at (the store is timed
// by its callers) leaves the batch as it is.
func routesTimedAt(in []intake.TimedRouteSettlement, at time.Time) []intake.TimedRouteSettlement {
	if at.IsZero() {
		return in
	}
	out := slices.Clone(in)
	for i := range out {
		out[i].Now = at
	}
	return out
}

// queueCallRead queues the reads of a batch of call results: the events
// and then the routes locked, each in the order of its key so that
// concurrent batches take them in one order; the consumers with their
// lanes (locked only with lockLanes); the events' route counts.
func queueCallRead(b *pgx.Batch, batch []intake.TimedRouteSettlement, lockLanes bool) *intake.RouteSettleRead {
	in := &intake.RouteSettleRead{Events: map[string]intake.EventState{}, Routes: map[intake.RouteKey]intake.Route{},
		Counts: map[string]intake.RouteCounts{}, Consumers: map[string]intake.ConsumerLane{}}
	keys := intake.RouteKeysOf(batch)
	eventIDs, consumers := keys.Events, keys.Consumers
	routeEvents, routeConsumers := make([]string, len(keys.Routes)), make([]string, len(keys.Routes))
	for i, k := range keys.Routes {
		routeEvents[i], routeConsumers[i] = k.EventID, k.ConsumerID
	}
	b.Queue(`SELECT id::text, state FROM events WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, nonNil(eventIDs)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var st intake.EventState
			if err := rows.Scan(&id, &st); err != nil {
				return err
			}
			in.Events[id] = st
		}
		return rows.Err()
	})
	b.Queue(`SELECT r.event_id::text, r.consumer_id::text, r.org_id::text, r.state, r.attempt, r.next_at, r.order_key, r.order_at,
		       r.last_error, r.lease_until
		  FROM unnest($1::uuid[], $2::uuid[]) AS k (event_id, consumer_id)
		  JOIN routes r ON r.event_id = k.event_id AND r.consumer_id = k.consumer_id
		 ORDER BY r.event_id, r.consumer_id FOR UPDATE OF r`, nonNil(routeEvents), nonNil(routeConsumers)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r intake.Route
			var next, orderAt, lease *time.Time
			if err := rows.Scan(&r.EventID, &r.ConsumerID, &r.OrgID, &r.State, &r.Attempt, &next, &r.OrderKey, &orderAt, &r.LastError, &lease); err != nil {
				return err
			}
			r.NextAt, r.OrderAt, r.LeaseUntil = fromTS(next), fromTS(orderAt), fromTS(lease)
			in.Routes[intake.RouteKey{EventID: r.EventID, ConsumerID: r.ConsumerID}] = r
		}
		return rows.Err()
	})
	queueConsumerLanes(b, consumers, lockLanes, in.Consumers)
	queueCallIssues(b, consumers, eventIDs, lockLanes, in)
	b.Queue(`SELECT event_id::text, count(*), count(*) FILTER (WHERE state = 'waiting'),
		count(*) FILTER (WHERE state = 'waiting' AND last_error <> ''), count(*) FILTER (WHERE state = 'filtered'),
		count(*) FILTER (WHERE state = 'dead'), count(*) FILTER (WHERE state = 'dropped')
		FROM routes WHERE event_id = ANY($1::uuid[]) GROUP BY event_id`, nonNil(eventIDs)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var n intake.RouteCounts
			if err := rows.Scan(&id, &n.Total, &n.Waiting, &n.Failed, &n.Filtered, &n.Dead, &n.Dropped); err != nil {
				return err
			}
			in.Counts[id] = n
		}
		return rows.Err()
	})
	return in
}

// queueCallWrite queues the writes of a decision on call results, a
// statement for each kind of row whatever the batch holds.
func queueCallWrite(p *pipeTx, d intake.RouteSettleDecision, s *Store) {
	b := p.b
	queueDeliveries(b, d.Deliveries)
	if n := len(d.Routes); n > 0 {
		events, consumers, states, lastErrors := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, nexts := make([]int32, n), make([]*time.Time, n)
		for i, r := range d.Routes {
			events[i], consumers[i], states[i], lastErrors[i] = r.EventID, r.ConsumerID, string(r.State), text(r.LastError)
			attempts[i], nexts[i] = int32(r.Attempt), tsPtr(r.NextAt)
		}
		b.Queue(`UPDATE routes r SET state = x.state, attempt = x.attempt, next_at = x.next_at, last_error = x.last_error, lease_until = NULL
			FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::timestamptz[], $6::text[])
			  AS x (event_id, consumer_id, state, attempt, next_at, last_error)
			WHERE r.event_id = x.event_id AND r.consumer_id = x.consumer_id`, events, consumers, states, attempts, nexts, lastErrors)
	}
	for _, l := range d.Lanes {
		b.Queue(`UPDATE consumer_lanes SET tokens = $2, refilled_at = $3, failures = $4, failing_since = $5, tripped = $6, probe_at = $7,
			probe_every_ms = $8 WHERE consumer_id = $1`,
			l.ConsumerID, l.Tokens, ts(l.RefilledAt), l.Failures, ts(l.FailingSince), l.Tripped, ts(l.ProbeAt), l.ProbeEvery.Milliseconds())
	}
	if n := len(d.Events); n > 0 {
		ids, states := make([]string, n), make([]string, n)
		for i, m := range d.Events {
			ids[i], states[i] = m.EventID, string(m.State)
		}
		// Each event's attempt shows the most any of its routes spent.
		b.Queue(`UPDATE events e SET state = x.state, attempt = coalesce((SELECT max(r.attempt) FROM routes r WHERE r.event_id = e.id), e.attempt)
			FROM unnest($1::uuid[], $2::text[]) AS x (id, state) WHERE e.id = x.id`, ids, states)
	}
	for _, a := range d.Disables {
		// Written only if the consumer is enabled still: an operator may
		// have disabled it since it was read.
		b.Queue(`WITH d AS (UPDATE consumers SET enabled = false, version = version + 1 WHERE id = $1 AND enabled AND deleted_at IS NULL RETURNING org_id)
			INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
			SELECT $2, org_id, $3, $4, $5, $6, $7, $8 FROM d`,
			a.TargetID, a.ID, text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At))
	}
	for _, a := range d.Audit {
		b.Queue(`INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			a.ID, nullID(a.OrgID), text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At))
	}
	queueIssueWrites(b, d.Issues, d.IssueItems)
	for _, n := range d.Notices {
		queueNotice(b, n)
	}
	if len(d.Disables) > 0 {
		b.Queue(`SELECT pg_notify($1, $2)`, changesChannel, s.instance)
		p.changed = true
	}
	if d.WakeRoutes {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance)
	}
}

func queueNotice(b *pgx.Batch, n intake.Notice) {
	b.Queue(`INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		n.ID, n.OrgID, text(n.Topic), text(n.Subject), text(n.Detail), ts(n.At))
}

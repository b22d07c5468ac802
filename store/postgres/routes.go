package postgres

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// earlierInFlight holds for event e while a webhook its connection received
// before it is not yet fanned out: its message is queued or being
// processed, or its event waits for its fan-out. An ordered route waits for
// it, since that webhook may turn out to precede it in its key; a message
// waiting to retry after a failure is not waited for.
const earlierInFlight = `(EXISTS (SELECT FROM messages m WHERE m.connection_id = e.connection_id AND m.state IN ('queued', 'processing')
		AND m.received_at < e.received_at)
	OR EXISTS (SELECT FROM events p WHERE p.connection_id = e.connection_id AND p.state IN ('pending', 'retrying')
		AND p.next_attempt_at IS NOT NULL AND p.received_at < e.received_at))`

// routeCountsSQL counts an event's routes as intake.RouteCounts.
const routeCountsSQL = `SELECT count(*), count(*) FILTER (WHERE state = 'waiting'),
		count(*) FILTER (WHERE state = 'waiting' AND last_error <> ''), count(*) FILTER (WHERE state = 'filtered'),
		count(*) FILTER (WHERE state = 'dead'), count(*) FILTER (WHERE state = 'dropped')
	FROM routes WHERE event_id = $1`

func scanCounts(row pgx.Row, n *intake.RouteCounts) error {
	return row.Scan(&n.Total, &n.Waiting, &n.Failed, &n.Filtered, &n.Dead, &n.Dropped)
}

// oldestDueRoute is the earliest due, unleased route of a consumer that is
// not paused, in org $1 (NULL: every org) at $2 (Store.clockNow: NULL,
// PostgreSQL's clock): the oldest due delivery
// work, read through routes_due one consumer at a time.
const oldestDueRoute = `(SELECT min((SELECT r.next_at FROM routes r
		WHERE r.consumer_id = c.id AND r.state = 'waiting' AND r.next_at <= coalesce($2::timestamptz, statement_timestamp())
		  AND (r.lease_until IS NULL OR r.lease_until <= coalesce($2::timestamptz, statement_timestamp()))
		ORDER BY r.next_at LIMIT 1))
	FROM consumers c WHERE NOT c.paused AND ($1::uuid IS NULL OR c.org_id = $1))`

// FanOut writes an event's routes, as intake.DecideFanOut decides them,
// in two round trips: the first locks the event and reads its routes and
// the consumers; the second writes the routes and their records, moves
// the event off the event queue and commits.
func (s *Store) FanOut(ctx context.Context, now time.Time, f intake.FanOut) (intake.FannedOut, error) {
	if !validIDs(f.EventID) {
		return intake.FannedOut{}, notFound("event", f.EventID)
	}
	consumers := make([]string, 0, len(f.Routes))
	for _, r := range f.Routes {
		consumers = append(consumers, r.ConsumerID)
	}
	var out intake.FannedOut
	var at time.Time
	err := s.pipeline(ctx, func(p *pipeTx) error {
		in := intake.FanOutRead{Routed: map[string]bool{}, Consumers: map[string]intake.ConsumerLane{}}
		found := false
		s.queueClock(p.b, &at)
		p.b.Queue(`SELECT `+eventColumns+`, lease_until IS NOT NULL FROM events WHERE id = $1 FOR UPDATE`, f.EventID).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var err error
					if in.Event, err = scanEvent(rows, &in.Leased); err != nil {
						return err
					}
					found = true
				}
				return rows.Err()
			})
		p.b.Queue(`SELECT consumer_id::text FROM routes WHERE event_id = $1`, f.EventID).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				in.Routed[id] = true
			}
			return rows.Err()
		})
		p.b.Queue(routeCountsSQL, f.EventID).QueryRow(func(row pgx.Row) error { return scanCounts(row, &in.Counts) })
		queueConsumerLanes(p.b, consumers, false, in.Consumers)
		queueFanOutIssues(p.b, consumers, &in)
		if err := p.flush(ctx); err != nil {
			return err
		}
		if !found {
			return notFound("event", f.EventID)
		}
		// The routes are due, and the calls leased, by PostgreSQL's clock
		// unless the store is timed by its callers.
		decidedAt := now
		if !at.IsZero() {
			decidedAt = at
		}
		var err error
		if out, err = intake.DecideFanOut(in, f, decidedAt); err != nil {
			return err
		}
		queueRoutes(p.b, out.Routes, s.callerClock)
		queueDeliveries(p.b, out.Deliveries)
		queueIssueWrites(p.b, out.Issues, out.IssueItems)
		for _, n := range out.Notices {
			queueNotice(p.b, n)
		}
		p.b.Queue(`UPDATE events SET state = $2, next_attempt_at = NULL, lease_until = NULL WHERE id = $1`, f.EventID, string(out.State))
		if out.Wake {
			p.b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance)
		}
		return nil
	})
	if err != nil {
		return intake.FannedOut{}, err
	}
	if out.Wake {
		s.hub.Notify(intake.TopicRoutes)
	}
	if !at.IsZero() {
		// The calls are handed back with their leases by the caller's
		// clock, as a claim answers them.
		for i, c := range out.Calls {
			out.Calls[i].LeaseUntil = rebase(c.LeaseUntil, at, now)
		}
	}
	return out, nil
}

// queueRoutes inserts new routes, in one statement. A new route is due
// when it is decided (NextAt): one leased is leased for as long from then
// by PostgreSQL's clock, unless callerClock.
func queueRoutes(b *pgx.Batch, routes []intake.Route, callerClock bool) {
	n := len(routes)
	if n == 0 {
		return
	}
	events, consumers, orgs, states, keys := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts := make([]int32, n)
	nexts, orderAts, leases := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range routes {
		events[i], consumers[i], orgs[i], states[i], keys[i] = r.EventID, r.ConsumerID, r.OrgID, string(r.State), text(r.OrderKey)
		attempts[i], nexts[i], orderAts[i], leases[i] = int32(r.Attempt), tsPtr(r.NextAt), tsPtr(r.OrderAt), tsPtr(r.LeaseUntil)
	}
	b.Queue(`INSERT INTO routes (event_id, consumer_id, org_id, state, attempt, next_at, order_key, order_at, lease_until)
		SELECT event_id, consumer_id, org_id, state, attempt, next_at, order_key, order_at,
		       CASE WHEN $10::bool THEN lease_until ELSE statement_timestamp() + (lease_until - next_at) END
		  FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::int[], $6::timestamptz[], $7::text[],
		              $8::timestamptz[], $9::timestamptz[])
		    AS r (event_id, consumer_id, org_id, state, attempt, next_at, order_key, order_at, lease_until)`,
		events, consumers, orgs, states, attempts, nexts, keys, orderAts, leases, callerClock)
}

// queueDeliveries inserts delivery records, in one statement.
func queueDeliveries(b *pgx.Batch, ds []intake.Delivery) {
	if len(ds) == 0 {
		return
	}
	var cols deliveryColumns
	for _, d := range ds {
		cols.add(d)
	}
	b.Queue(`INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at,
		 max_attempts, response)
		SELECT `+deliveryUnnestColumns+` FROM `+deliveryUnnest(1), cols.args()...)
}

// deliveryColumns holds deliveries column by column, for one INSERT …
// SELECT FROM unnest.
type deliveryColumns struct {
	ids, orgs, events, consumers []string
	attempts, statuses, maxes    []int32
	outcomes, errors             []string
	latencies                    []int64
	ats                          []*time.Time
	responses                    []*string
}

func (d *deliveryColumns) add(x intake.Delivery) {
	d.ids, d.orgs, d.events, d.consumers = append(d.ids, x.ID), append(d.orgs, x.OrgID), append(d.events, x.EventID), append(d.consumers, x.ConsumerID)
	d.attempts, d.statuses = append(d.attempts, int32(x.Attempt)), append(d.statuses, int32(x.StatusCode))
	d.outcomes, d.errors = append(d.outcomes, x.Outcome), append(d.errors, text(x.Error))
	d.latencies, d.ats = append(d.latencies, x.Latency.Microseconds()), append(d.ats, tsPtr(x.At))
	d.maxes, d.responses = append(d.maxes, int32(x.MaxAttempts)), append(d.responses, responseJSON(x.Response))
}

// responseJSON is an answer as its column holds it (nil: none).
func responseJSON(r *intake.DeliveryResponse) *string {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

func (d *deliveryColumns) args() []any {
	return []any{nonNil(d.ids), nonNil(d.orgs), nonNil(d.events), nonNil(d.consumers), d.attempts, d.outcomes, d.statuses,
		d.latencies, nonNil(d.errors), d.ats, d.maxes, d.responses}
}

// tsPtr is ts for an array element.
func tsPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const deliveryUnnestColumns = `x.id, x.org_id, x.event_id, x.consumer_id, x.attempt, x.outcome, x.status_code, x.latency_us, x.error, x.at,
	x.max_attempts, x.response`

// deliveryUnnest is the table of deliveryColumns.args() from parameter $first on.
func deliveryUnnest(first int) string {
	p := func(i int, typ string) string { return "$" + strconv.Itoa(first+i) + "::" + typ }
	return `unnest(` + p(0, "uuid[]") + `, ` + p(1, "uuid[]") + `, ` + p(2, "uuid[]") + `, ` + p(3, "uuid[]") + `, ` + p(4, "int[]") + `, ` +
		p(5, "text[]") + `, ` + p(6, "int[]") + `, ` + p(7, "bigint[]") + `, ` + p(8, "text[]") + `, ` + p(9, "timestamptz[]") +
		`, ` + p(10, "int[]") + `, ` + p(11, "text[]") +
		`) AS x (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at, max_attempts, response)`
}

// laneColumns are a lane's columns, as scanLane reads them (l is
// consumer_lanes).
const laneColumns = `l.consumer_id::text, l.org_id::text, l.tokens, l.refilled_at, l.failures, l.failing_since, l.tripped, l.probe_at, l.probe_every_ms`

func laneDests(l *intake.Lane) (dests []any, done func()) {
	var refilled, failing, probe *time.Time
	var everyMS int64
	return []any{&l.ConsumerID, &l.OrgID, &l.Tokens, &refilled, &l.Failures, &failing, &l.Tripped, &probe, &everyMS},
		func() {
			l.RefilledAt, l.FailingSince, l.ProbeAt = fromTS(refilled), fromTS(failing), fromTS(probe)
			l.ProbeEvery = time.Duration(everyMS) * time.Millisecond
		}
}

// ClaimRoutes leases due routes consumer by consumer, in two round trips.
// The first locks the lanes of the consumers with due routes (FOR UPDATE
// SKIP LOCKED: a lane another process is claiming for is skipped, which
// is what holds rate and max_in_flight across processes) and then, seeing
// every commit before its locks, counts their calls in flight. Each lane
// allows its share in Go. The second leases the routes, saves the lanes
// (giving back the tokens of calls it found no route for) and commits.
// Leases are taken and judged, routes judged due, and the lanes' rates
// and breakers' probes timed by PostgreSQL's clock (see
// Options.CallerClock).
func (s *Store) ClaimRoutes(ctx context.Context, now time.Time, lease time.Duration, shares intake.CallShares) ([]intake.RouteClaim, error) {
	limit := shares.Total
	if limit <= 0 {
		return nil, nil
	}
	type candidate struct {
		controls intake.Controls
		live     bool // enabled and not deleted: its lane's rules apply
		due      int  // its due routes (up to limit), before ordering
		lane     intake.Lane
		was      intake.Lane
	}
	var claims []intake.RouteClaim
	err := s.pipeline(ctx, func(p *pipeTx) error {
		claims = nil
		var cands []*candidate
		inFlight := map[string]int{}
		var at time.Time
		s.queueClock(p.b, &at)
		// Every consumer has its lane: created with it, and by the
		// migration for those that came before lanes.
		p.b.Queue(`SELECT c.enabled AND c.deleted_at IS NULL, d.n, `+prefixed("c.", controlColumns)+`, `+laneColumns+`
			  FROM consumer_lanes l JOIN consumers c ON c.id = l.consumer_id
			 CROSS JOIN LATERAL (SELECT count(*) AS n FROM (SELECT FROM routes r
			        WHERE r.consumer_id = l.consumer_id AND r.state = 'waiting' AND r.next_at <= coalesce($1::timestamptz, statement_timestamp())
			          AND (r.lease_until IS NULL OR r.lease_until <= coalesce($1::timestamptz, statement_timestamp())) LIMIT $2) r) d
			 WHERE NOT c.paused AND d.n > 0
			 ORDER BY l.claimed_at NULLS FIRST, l.consumer_id
			 LIMIT $2
			   FOR UPDATE OF l SKIP LOCKED`, s.clockNow(now), limit).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					c := &candidate{}
					controls, doneC := controlDests(&c.controls)
					lane, doneL := laneDests(&c.lane)
					if err := rows.Scan(append(append([]any{&c.live, &c.due}, controls...), lane...)...); err != nil {
						return err
					}
					doneC()
					doneL()
					c.was = c.lane
					cands = append(cands, c)
				}
				return rows.Err()
			})
		// A separate statement, so its snapshot follows the locks above:
		// it sees every lease committed by whoever held them before. Only
		// a concurrency limit and a tripped breaker's probe look at the
		// calls in flight, so only those consumers' are counted.
		p.b.Queue(`SELECT r.consumer_id::text, count(*) FROM consumers c JOIN consumer_lanes l ON l.consumer_id = c.id
			  JOIN routes r ON r.consumer_id = c.id AND r.state = 'waiting'
			   AND r.lease_until > coalesce($1::timestamptz, statement_timestamp())
			 WHERE c.max_in_flight > 0 OR l.tripped
			 GROUP BY r.consumer_id`, s.clockNow(now)).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id string
					var n int
					if err := rows.Scan(&id, &n); err != nil {
						return err
					}
					inFlight[id] = n
				}
				return rows.Err()
			})
		if err := p.flush(ctx); err != nil {
			return err
		}
		if len(cands) == 0 {
			return nil
		}
		// The lanes are timed, and routes judged due, by PostgreSQL's
		// clock read with the locks unless the store is timed by its
		// callers.
		laneNow := now
		if !at.IsZero() {
			laneNow = at
		}
		var (
			ids                           []string
			want                          []int32
			ordered, probes, rated        []bool
			tokens                        []float64
			refilled, probeAt, wasProbeAt []*time.Time
			probeEvery, wasProbeEvery     []int64
			probing                       = map[string]bool{}
		)
		shares := shares // a retried transaction starts from the caller's
		for _, c := range cands {
			n, probe := shares.Allow(c.lane.OrgID, c.lane.ConsumerID, c.controls, c.due), false
			if c.live && n > 0 {
				n, probe = c.lane.Allow(c.controls, laneNow, inFlight[c.lane.ConsumerID], n)
			}
			shares.Took(c.lane.OrgID, c.lane.ConsumerID, n)
			ids = append(ids, c.lane.ConsumerID)
			want = append(want, int32(n))
			ordered = append(ordered, c.live && c.controls.Ordering != "")
			probes = append(probes, probe)
			rated = append(rated, c.live && c.controls.RatePerSec > 0)
			tokens = append(tokens, c.lane.Tokens)
			if probe {
				probing[c.lane.ConsumerID] = true
			}
			refilled = append(refilled, tsPtr(c.lane.RefilledAt))
			probeAt, wasProbeAt = append(probeAt, tsPtr(c.lane.ProbeAt)), append(wasProbeAt, tsPtr(c.was.ProbeAt))
			probeEvery, wasProbeEvery = append(probeEvery, c.lane.ProbeEvery.Milliseconds()), append(wasProbeEvery, c.was.ProbeEvery.Milliseconds())
		}
		// For a consumer with ordering, a route goes only when no waiting
		// route of its key is ordered before it (leased or not, due or
		// not), and no earlier webhook of its connection is still on its
		// way to being fanned out (see earlierInFlight); routes without a
		// key are unordered.
		p.b.Queue(`WITH w AS (
				SELECT * FROM unnest($1::uuid[], $2::int[], $3::bool[], $4::bool[], $5::double precision[], $6::timestamptz[],
				       $7::timestamptz[], $8::bigint[], $9::timestamptz[], $10::bigint[], $13::bool[])
				    AS w (consumer_id, n, ordered, probe, tokens, refilled_at, probe_at, probe_every_ms, was_probe_at, was_probe_every_ms, rated)
			), pick AS (
				SELECT r.event_id, r.consumer_id FROM w CROSS JOIN LATERAL (
					SELECT r.event_id, r.consumer_id FROM routes r
					 WHERE r.consumer_id = w.consumer_id AND r.state = 'waiting' AND r.next_at <= $11
					   AND (r.lease_until IS NULL OR r.lease_until <= coalesce($14::timestamptz, statement_timestamp()))
					   AND (NOT w.ordered OR r.order_key = '' OR NOT EXISTS (
					        SELECT FROM routes b WHERE b.consumer_id = r.consumer_id AND b.state = 'waiting' AND b.order_key = r.order_key
					           AND (b.order_at, b.event_id) < (r.order_at, r.event_id))
					       AND NOT EXISTS (SELECT FROM events e WHERE e.id = r.event_id AND `+earlierInFlight+`))
					 ORDER BY r.next_at, r.event_id
					 LIMIT w.n
					   FOR UPDATE SKIP LOCKED) r
			), leased AS (
				UPDATE routes r SET lease_until = coalesce($14::timestamptz, statement_timestamp()) + $12::bigint * interval '1 microsecond',
				       -- a call whose lease ran out unsettled counts as failed
				       attempt = r.attempt + (r.lease_until IS NOT NULL)::int,
				       last_error = CASE WHEN r.lease_until IS NOT NULL THEN '`+intake.RouteLeaseExpired+`' ELSE r.last_error END
				  FROM pick
				 WHERE r.event_id = pick.event_id AND r.consumer_id = pick.consumer_id
				RETURNING r.event_id, r.consumer_id, r.attempt, r.order_key
			), taken AS (
				SELECT consumer_id, count(*) AS n FROM leased GROUP BY consumer_id
			), lanes AS (
				UPDATE consumer_lanes l
				   SET tokens = CASE WHEN w.rated THEN w.tokens + (w.n - coalesce(t.n, 0)) ELSE w.tokens END,
				       refilled_at = w.refilled_at,
				       probe_at = CASE WHEN w.probe AND t.n IS NULL THEN w.was_probe_at ELSE w.probe_at END,
				       probe_every_ms = CASE WHEN w.probe AND t.n IS NULL THEN w.was_probe_every_ms ELSE w.probe_every_ms END,
				       claimed_at = $11
				  FROM w LEFT JOIN taken t ON t.consumer_id = w.consumer_id
				 WHERE l.consumer_id = w.consumer_id
			)
			SELECT `+prefixed("e.", eventColumns)+`, leased.consumer_id::text, leased.attempt, leased.order_key
			  FROM leased JOIN events e ON e.id = leased.event_id
			 ORDER BY leased.consumer_id, e.id`,
			ids, want, ordered, probes, tokens, refilled, probeAt, probeEvery, wasProbeAt, wasProbeEvery, ts(laneNow), micros(lease), rated,
			s.clockNow(now)).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var c intake.RouteClaim
					var attempt int
					e, err := scanEvent(rows, &c.ConsumerID, &attempt, &c.OrderKey)
					if err != nil {
						return err
					}
					c.Event, c.Attempt, c.LeaseUntil = e, attempt+1, now.Add(lease).UTC().Truncate(time.Microsecond)
					// The lane allowed a tripped consumer one call: its probe.
					c.Probe = probing[c.ConsumerID]
					claims = append(claims, c)
				}
				return rows.Err()
			})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// ConsumerHealth reads how deliveries to a consumer stand, in one round
// trip.
func (s *Store) ConsumerHealth(ctx context.Context, sc intake.Scope, consumerID string, now time.Time) (intake.ConsumerHealth, error) {
	var h intake.ConsumerHealth
	if !validIDs(consumerID) {
		return h, notFound("consumer", consumerID)
	}
	var found bool
	var st intake.ConsumerStanding
	var bl intake.Backlog
	var p50, p99 *int64
	var lastAt, oldest, later, probeAt *time.Time
	org := nullID(sc.OrgID)
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT c.enabled, c.paused, coalesce(l.tripped, false), coalesce(l.failures, 0), l.probe_at
			FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
			WHERE c.deleted_at IS NULL AND c.id = $1 AND ($2::uuid IS NULL OR c.org_id = $2)`, consumerID, org).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					found = true
					if err := rows.Scan(&st.Enabled, &st.Paused, &st.Tripped, &st.Failures, &probeAt); err != nil {
						return err
					}
				}
				return rows.Err()
			})
		// Nearest rank: percentile_disc is the first latency whose
		// cumulative share reaches p.
		b.Queue(`SELECT count(*) FILTER (WHERE outcome IN ('handled', 'ignored')), count(*) FILTER (WHERE outcome IN ('retry', 'dead')),
				percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us), percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
			FROM deliveries WHERE consumer_id = $1 AND at >= $2 AND outcome IN ('handled', 'ignored', 'retry', 'dead')
			  AND ($3::uuid IS NULL OR org_id = $3)`, consumerID, ts(now.Add(-time.Hour)), org).
			QueryRow(func(row pgx.Row) error { return row.Scan(&h.Delivered1h, &h.Failed1h, &p50, &p99) })
		b.Queue(`SELECT status_code, error, at FROM deliveries WHERE consumer_id = $1 AND outcome NOT IN ('filtered', 'held')
			  AND ($2::uuid IS NULL OR org_id = $2) ORDER BY at DESC, id DESC LIMIT 1`, consumerID, org).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					if err := rows.Scan(&h.LastStatus, &h.LastError, &lastAt); err != nil {
						return err
					}
				}
				return rows.Err()
			})
		// Leased and due as the claims judge them: by PostgreSQL's clock
		// unless the store is timed by its callers.
		b.Queue(`SELECT count(*) FILTER (WHERE lease_until > k.now),
				count(*) FILTER (WHERE lease_until IS NULL OR lease_until <= k.now),
				count(*) FILTER (WHERE (lease_until IS NULL OR lease_until <= k.now) AND next_at <= k.now),
				min(next_at) FILTER (WHERE (lease_until IS NULL OR lease_until <= k.now) AND next_at <= k.now),
				count(*) FILTER (WHERE (lease_until IS NULL OR lease_until <= k.now) AND next_at > k.now),
				min(next_at) FILTER (WHERE (lease_until IS NULL OR lease_until <= k.now) AND next_at > k.now)
			FROM (SELECT coalesce($2::timestamptz, statement_timestamp()) AS now) k, routes
			WHERE consumer_id = $1 AND state = 'waiting' AND ($3::uuid IS NULL OR org_id = $3)`, consumerID, s.clockNow(now), org).
			QueryRow(func(row pgx.Row) error {
				return row.Scan(&h.InFlight, &bl.Waiting, &bl.Due, &oldest, &bl.Later, &later)
			})
		b.Queue(`SELECT count(*) FROM deliveries WHERE consumer_id = $1 AND at >= $2 AND outcome = 'filtered' AND starts_with(error, $4)
			  AND ($3::uuid IS NULL OR org_id = $3)`, consumerID, ts(now.Add(-time.Hour)), org, intake.FilterErrorPrefix).
			QueryRow(func(row pgx.Row) error { return row.Scan(&h.FilterErrors1h) })
	})
	if err != nil {
		return intake.ConsumerHealth{}, err
	}
	if !found {
		return intake.ConsumerHealth{}, notFound("consumer", consumerID)
	}
	bl.OldestDue, bl.NextLater, st.ProbeAt = fromTS(oldest), fromTS(later), fromTS(probeAt)
	h.SetBacklog(st, bl)
	if p50 != nil {
		h.P50 = time.Duration(*p50) * time.Microsecond
	}
	if p99 != nil {
		h.P99 = time.Duration(*p99) * time.Microsecond
	}
	h.LastDeliveryAt = fromTS(lastAt)
	return h, nil
}

// ConsumerStates names the state of every consumer visible in sc.
func (s *Store) ConsumerStates(ctx context.Context, sc intake.Scope) (map[string]string, error) {
	type standing struct {
		id string
		intake.ConsumerStanding
	}
	var rows []standing
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &rows, func(row pgx.Row) (standing, error) {
			var st standing
			err := row.Scan(&st.id, &st.Enabled, &st.Paused, &st.Tripped, &st.Failures)
			return st, err
		}, `SELECT c.id, c.enabled, c.paused, coalesce(l.tripped, false), coalesce(l.failures, 0)
			FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
			WHERE c.deleted_at IS NULL AND ($1::uuid IS NULL OR c.org_id = $1)`, nullID(sc.OrgID))
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, st := range rows {
		out[st.id] = st.State()
	}
	return out, nil
}

// ReleaseRoute hands back a route's lease at attempt: unleased, it is
// claimed again from at on as the same attempt.
func (s *Store) ReleaseRoute(ctx context.Context, at time.Time, eventID, consumerID string, attempt int) error {
	if !validIDs(eventID, consumerID) {
		return nil
	}
	var released bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE routes SET lease_until = NULL, next_at = greatest(next_at, $1)
			WHERE event_id = $2 AND consumer_id = $3 AND state = 'waiting' AND attempt = $4 AND lease_until IS NOT NULL`,
			ts(at), eventID, consumerID, attempt-1)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		released = true
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance)
		return err
	})
	if err == nil && released {
		s.hub.Notify(intake.TopicRoutes)
	}
	return err
}

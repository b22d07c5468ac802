package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// txAfter runs fn in the next group commit and after once that commit
// returned, if fn succeeded.
func (s *Store) txAfter(ctx context.Context, fn func(*wtx) error, after func()) error {
	return s.submit(writeJob{ctx: ctx, fn: fn, after: after})
}

func (s *Store) notifyRoutes() { s.hub.Notify(intake.TopicRoutes) }

// controlColumns are a consumer's controls, as scanControls reads them.
const controlColumns = `c.paused, c.rate_per_sec, c.max_in_flight, c.ordering, c.retry_attempts, c.retry_base_ms, c.breaker_failures,
	c.auto_disable_after_s`

// scanControls reads the extra columns, then controlColumns.
func scanControls(row interface{ Scan(...any) error }, c *intake.Controls, extra ...any) error {
	var baseMS, autoS int64
	if err := row.Scan(append(extra, &c.Paused, &c.RatePerSec, &c.MaxInFlight, &c.Ordering, &c.Retry.Attempts, &baseMS,
		&c.BreakerFailures, &autoS)...); err != nil {
		return err
	}
	c.Retry.Base, c.AutoDisableAfter = time.Duration(baseMS)*time.Millisecond, time.Duration(autoS)*time.Second
	return nil
}

func controlArgs(c intake.Controls) []any {
	return []any{c.Paused, c.RatePerSec, c.MaxInFlight, c.Ordering, c.Retry.Attempts, c.Retry.Base.Milliseconds(), c.BreakerFailures,
		int64(c.AutoDisableAfter / time.Second)}
}

const laneColumns = `coalesce(l.tokens, 0), l.refilled_at, coalesce(l.failures, 0), l.failing_since, coalesce(l.tripped, 0), l.probe_at,
	coalesce(l.probe_every_ms, 0)`

func laneDest(l *intake.Lane, refilled, failing, probe *sql.NullInt64, everyMS *int64) []any {
	return []any{&l.Tokens, refilled, &l.Failures, failing, &l.Tripped, probe, everyMS}
}

func fillLane(l *intake.Lane, refilled, failing, probe sql.NullInt64, everyMS int64) {
	l.RefilledAt, l.FailingSince, l.ProbeAt = fromTS(refilled), fromTS(failing), fromTS(probe)
	l.ProbeEvery = time.Duration(everyMS) * time.Millisecond
}

type candidate struct {
	id, org string
	live    bool // enabled and not deleted
	ctl     intake.Controls
	lane    intake.Lane
}

// ClaimRoutes leases due routes, consumer by consumer in turn, each
// consumer's share allowed by the caller's shares and by its lane.
func (s *Store) ClaimRoutes(ctx context.Context, now time.Time, lease time.Duration, shares intake.CallShares) ([]intake.RouteClaim, error) {
	if shares.Total <= 0 {
		return nil, nil
	}
	var claims []intake.RouteClaim
	err := s.tx(ctx, func(tx *wtx) error {
		claims = nil
		shares := shares // a retried transaction starts from the caller's
		var cands []candidate
		rows, err := tx.QueryContext(ctx, `SELECT c.id, c.org_id, c.enabled AND c.deleted_at IS NULL, `+laneColumns+`, `+controlColumns+`
			FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
			WHERE (c.paused = 0 OR NOT c.enabled OR c.deleted_at IS NOT NULL)
			  AND EXISTS (SELECT 1 FROM routes r INDEXED BY routes_due WHERE r.consumer_id = c.id AND r.state = 'waiting'
			    AND r.next_at <= ?1 AND (r.lease_until IS NULL OR r.lease_until <= ?1))
			ORDER BY l.claimed_at NULLS FIRST, c.id`, ts(now))
		if err != nil {
			return err
		}
		for rows.Next() {
			var c candidate
			var refilled, failing, probe sql.NullInt64
			var everyMS int64
			if err := scanControls(rows, &c.ctl, append([]any{&c.id, &c.org, &c.live}, laneDest(&c.lane, &refilled, &failing, &probe, &everyMS)...)...); err != nil {
				rows.Close()
				return err
			}
			fillLane(&c.lane, refilled, failing, probe, everyMS)
			c.lane.ConsumerID, c.lane.OrgID = c.id, c.org
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range cands {
			if shares.Total <= 0 {
				break
			}
			n, probe := shares.Allow(c.org, c.id, c.ctl, shares.Total), false
			if n <= 0 {
				continue // at its share: its lane is left as it was
			}
			if c.live {
				// Only a concurrency limit and a tripped breaker's probe
				// look at the calls in flight.
				var inFlight int
				if c.ctl.MaxInFlight > 0 || c.lane.Tripped {
					if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM routes INDEXED BY routes_in_flight
						WHERE consumer_id = ? AND state = 'waiting' AND lease_until > ?`, c.id, ts(now)).Scan(&inFlight); err != nil {
						return err
					}
				}
				n, probe = c.lane.Allow(c.ctl, now, inFlight, n)
			}
			if n > 0 {
				got, err := claimConsumerRoutes(ctx, tx, c, now, lease, n, probe)
				if err != nil {
					return err
				}
				shares.Took(c.org, c.id, len(got))
				claims = append(claims, got...)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO consumer_lanes (consumer_id, org_id, tokens, refilled_at, probe_at, probe_every_ms, claimed_at)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (consumer_id) DO UPDATE SET tokens = ?3, refilled_at = ?4, probe_at = ?5,
				probe_every_ms = ?6, claimed_at = ?7`,
				c.id, c.org, c.lane.Tokens, ts(c.lane.RefilledAt), ts(c.lane.ProbeAt), c.lane.ProbeEvery.Milliseconds(), ts(now)); err != nil {
				return err
			}
		}
		return loadClaimEvents(ctx, tx, claims)
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// earlierInFlight holds for event e while a webhook its connection received
// before it is not yet fanned out: its message is queued or being
// processed, or its event waits for its fan-out. An ordered route waits for
// it, since that webhook may turn out to precede it in its key; a message
// waiting to retry after a failure is not waited for.
const earlierInFlight = `(EXISTS (SELECT 1 FROM messages m INDEXED BY messages_in_flight WHERE m.connection_id = e.connection_id
		AND m.state IN ('queued', 'processing') AND m.received_at < e.received_at)
	OR EXISTS (SELECT 1 FROM events p INDEXED BY events_unrouted WHERE p.connection_id = e.connection_id AND p.state IN ('pending', 'retrying')
		AND p.next_attempt_at IS NOT NULL AND p.received_at < e.received_at))`

// Due, unleased routes of one consumer: unordered, then for a consumer
// with ordering the first waiting route of each key, found key by key
// down the routes_order index, so a long queue of one key is not read,
// while no earlier webhook of its connection is on its way to being
// fanned out (earlierInFlight).
const (
	dueRoutesSQL = `SELECT event_id, attempt, lease_until IS NOT NULL, order_key FROM routes INDEXED BY routes_due
		WHERE consumer_id = ?1 AND state = 'waiting' AND next_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
		ORDER BY next_at, event_id LIMIT ?3`
	orderedRoutesSQL = `WITH RECURSIVE keys (k) AS (
			SELECT (SELECT order_key FROM routes INDEXED BY routes_order WHERE consumer_id = ?1 AND state = 'waiting' AND order_key <> ''
				ORDER BY order_key LIMIT 1)
			UNION ALL
			SELECT (SELECT order_key FROM routes INDEXED BY routes_order WHERE consumer_id = ?1 AND state = 'waiting' AND order_key > keys.k AND order_key <> ''
				ORDER BY order_key LIMIT 1) FROM keys WHERE keys.k IS NOT NULL),
		heads (event_id) AS (
			SELECT (SELECT event_id FROM routes INDEXED BY routes_order WHERE consumer_id = ?1 AND state = 'waiting' AND order_key = keys.k AND order_key <> ''
				ORDER BY order_at, event_id LIMIT 1) FROM keys WHERE keys.k IS NOT NULL)
		SELECT event_id, attempt, lease_until IS NOT NULL, order_key, next_at FROM routes r
		 WHERE consumer_id = ?1 AND event_id IN (SELECT event_id FROM heads)
		   AND state = 'waiting' AND next_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
		   AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = r.event_id AND ` + earlierInFlight + `)
		UNION ALL
		SELECT event_id, attempt, lease_until IS NOT NULL, order_key, next_at FROM routes INDEXED BY routes_due
		 WHERE consumer_id = ?1 AND state = 'waiting' AND next_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2) AND order_key = ''
		ORDER BY 5, 1 LIMIT ?3`
)

func claimConsumerRoutes(ctx context.Context, tx *wtx, c candidate, now time.Time, lease time.Duration, n int, probe bool) ([]intake.RouteClaim, error) {
	q := dueRoutesSQL
	if c.ctl.Ordering != "" && c.live {
		q = orderedRoutesSQL
	}
	rows, err := tx.QueryContext(ctx, q, c.id, ts(now), n)
	if err != nil {
		return nil, err
	}
	until := now.Add(lease)
	var out []intake.RouteClaim
	var lapsed []bool
	for rows.Next() {
		var id, key string
		var attempt int
		var expired bool
		dest := []any{&id, &attempt, &expired, &key}
		if q == orderedRoutesSQL {
			var next int64
			dest = append(dest, &next)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, err
		}
		if expired {
			attempt++ // the call whose lease ran out unsettled counts as failed
		}
		out = append(out, intake.RouteClaim{Event: intake.Event{ID: id}, ConsumerID: c.id, Attempt: attempt + 1, Probe: probe, LeaseUntil: until,
			OrderKey: key})
		lapsed = append(lapsed, expired)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, cl := range out {
		q := `UPDATE routes SET lease_until = ? WHERE event_id = ? AND consumer_id = ?`
		if lapsed[i] {
			q = `UPDATE routes SET lease_until = ?, attempt = attempt + 1, last_error = '` + intake.RouteLeaseExpired + `'
				WHERE event_id = ? AND consumer_id = ?`
		}
		if _, err := tx.ExecContext(ctx, q, ts(until), cl.Event.ID, c.id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadClaimEvents fills in the claims' events, in one read per chunk.
func loadClaimEvents(ctx context.Context, tx *wtx, claims []intake.RouteClaim) error {
	byID := map[string][]int{}
	for i, c := range claims {
		byID[c.Event.ID] = append(byID[c.Event.ID], i)
	}
	ids := make([]any, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		rows, err := tx.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, chunk...)
		if err != nil {
			return err
		}
		for rows.Next() {
			e, err := scanEvent(rows)
			if err != nil {
				rows.Close()
				return err
			}
			for _, i := range byID[e.ID] {
				claims[i].Event = e
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// ConsumerHealth reads how deliveries to a consumer stand.
func (s *Store) ConsumerHealth(ctx context.Context, sc intake.Scope, consumerID string, now time.Time) (intake.ConsumerHealth, error) {
	var h intake.ConsumerHealth
	tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return h, classify(err)
	}
	defer tx.Rollback()
	var st intake.ConsumerStanding
	var probeAt sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT c.enabled, c.paused, coalesce(l.tripped, 0), coalesce(l.failures, 0), l.probe_at
		FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
		WHERE c.deleted_at IS NULL AND c.id = ?1 AND (?2 = '' OR c.org_id = ?2)`, consumerID, sc.OrgID).Scan(&st.Enabled, &st.Paused, &st.Tripped, &st.Failures, &probeAt)
	if errors.Is(err, sql.ErrNoRows) {
		return h, notFound("consumer", consumerID)
	}
	if err != nil {
		return h, classify(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT outcome, latency_us FROM deliveries INDEXED BY deliveries_consumer_at
		WHERE consumer_id = ? AND at >= ? AND outcome IN ('handled', 'ignored', 'retry', 'dead') ORDER BY latency_us`,
		consumerID, ts(now.Add(-time.Hour)))
	if err != nil {
		return h, classify(err)
	}
	var latencies []int64
	for rows.Next() {
		var outcome string
		var us int64
		if err := rows.Scan(&outcome, &us); err != nil {
			rows.Close()
			return h, classify(err)
		}
		if outcome == intake.DeliveryRetry || outcome == intake.DeliveryDead {
			h.Failed1h++
		} else {
			h.Delivered1h++
		}
		latencies = append(latencies, us)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return h, classify(err)
	}
	h.P50, h.P99 = nearestRank(latencies, 50), nearestRank(latencies, 99)
	var last sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT status_code, error, at FROM deliveries INDEXED BY deliveries_consumer_at
		WHERE consumer_id = ? AND outcome NOT IN ('filtered', 'held') ORDER BY at DESC, id DESC LIMIT 1`, consumerID).Scan(&h.LastStatus, &h.LastError, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, classify(err)
	}
	h.LastDeliveryAt = fromTS(last)
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM deliveries INDEXED BY deliveries_consumer_at
		WHERE consumer_id = ? AND at >= ? AND outcome = 'filtered' AND error LIKE ?`,
		consumerID, ts(now.Add(-time.Hour)), intake.FilterErrorPrefix+"%").Scan(&h.FilterErrors1h)
	if err != nil {
		return h, classify(err)
	}
	var b intake.Backlog
	var oldest, later sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM routes INDEXED BY routes_in_flight WHERE consumer_id = ?1 AND state = 'waiting' AND lease_until > ?2),
		(SELECT count(*) FROM routes INDEXED BY routes_due WHERE consumer_id = ?1 AND state = 'waiting' AND (lease_until IS NULL OR lease_until <= ?2)),
		(SELECT count(*) FROM routes INDEXED BY routes_due WHERE consumer_id = ?1 AND state = 'waiting' AND next_at <= ?2
			AND (lease_until IS NULL OR lease_until <= ?2)),
		(SELECT min(next_at) FROM routes INDEXED BY routes_due WHERE consumer_id = ?1 AND state = 'waiting' AND next_at <= ?2
			AND (lease_until IS NULL OR lease_until <= ?2)),
		(SELECT count(*) FROM routes INDEXED BY routes_due WHERE consumer_id = ?1 AND state = 'waiting' AND next_at > ?2
			AND (lease_until IS NULL OR lease_until <= ?2)),
		(SELECT min(next_at) FROM routes INDEXED BY routes_due WHERE consumer_id = ?1 AND state = 'waiting' AND next_at > ?2
			AND (lease_until IS NULL OR lease_until <= ?2))`, consumerID, ts(now)).Scan(&h.InFlight, &b.Waiting, &b.Due, &oldest, &b.Later, &later)
	if err != nil {
		return h, classify(err)
	}
	b.OldestDue, b.NextLater, st.ProbeAt = fromTS(oldest), fromTS(later), fromTS(probeAt)
	h.SetBacklog(st, b)
	return h, nil
}

// nearestRank is the p-th percentile of sorted latencies (µs) by the
// nearest-rank method; 0 when there are none.
func nearestRank(sorted []int64, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return time.Duration(sorted[max(rank, 1)-1]) * time.Microsecond
}

// oldestDueRoute is when the longest-waiting due route of a consumer that
// is not paused became due, visible in the org (every org for "").
func oldestDueRoute(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, orgID string, now time.Time) (time.Time, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT min((SELECT r.next_at FROM routes r INDEXED BY routes_due
			WHERE r.consumer_id = c.id AND r.state = 'waiting' AND r.next_at <= ?2 AND (r.lease_until IS NULL OR r.lease_until <= ?2)
			ORDER BY r.next_at LIMIT 1))
		FROM consumers c WHERE c.paused = 0 AND (?1 = '' OR c.org_id = ?1)`, orgID, ts(now)).Scan(&v)
	return fromTS(v), err
}

// earliest returns the earlier of two times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// ConsumerStates names the state of every consumer visible in sc.
func (s *Store) ConsumerStates(ctx context.Context, sc intake.Scope) (map[string]string, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT c.id, c.enabled, c.paused, coalesce(l.tripped, 0), coalesce(l.failures, 0)
		FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
		WHERE c.deleted_at IS NULL AND (?1 = '' OR c.org_id = ?1)`, sc.OrgID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id string
		var st intake.ConsumerStanding
		if err := rows.Scan(&id, &st.Enabled, &st.Paused, &st.Tripped, &st.Failures); err != nil {
			return nil, classify(err)
		}
		out[id] = st.State()
	}
	return out, classify(rows.Err())
}

// ReleaseRoute hands back a route's lease at attempt: unleased, it is
// claimed again from at on as the same attempt.
func (s *Store) ReleaseRoute(ctx context.Context, at time.Time, eventID, consumerID string, attempt int) error {
	var released bool
	err := s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE routes SET lease_until = NULL, next_at = max(next_at, ?)
			WHERE event_id = ? AND consumer_id = ? AND state = 'waiting' AND attempt = ? AND lease_until IS NOT NULL`,
			ts(at), eventID, consumerID, attempt-1)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		released = n > 0
		return err
	})
	if err == nil && released {
		s.notifyRoutes()
	}
	return err
}

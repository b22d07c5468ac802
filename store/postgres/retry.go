package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// retryWhere is the condition on routes a retry selection makes: waiting,
// not leased at $1 (Store.clockNow: NULL, PostgreSQL's clock), visible in the org $2, of the event or consumer $3 (and
// of the events $4).
func retryWhere(sel intake.RetrySelection) (string, []any) {
	where := `state = 'waiting' AND (lease_until IS NULL OR lease_until <= coalesce($1::timestamptz, statement_timestamp())) AND ($2::uuid IS NULL OR org_id = $2)`
	if sel.EventID != "" {
		return where + ` AND event_id = $3`, []any{sel.EventID}
	}
	where += ` AND consumer_id = $3`
	if len(sel.EventIDs) > 0 {
		return where + ` AND event_id = ANY($4::uuid[])`, []any{sel.ConsumerID, sel.EventIDs}
	}
	return where, []any{sel.ConsumerID}
}

// retrySelected reads the routes sel selects, of at most max events, the
// earliest due first: the events in that order and the consumers.
func retrySelected(ctx context.Context, tx pgx.Tx, sc intake.Scope, sel intake.RetrySelection, now any, max int) (events, consumers []string, err error) {
	where, args := retryWhere(sel)
	rows, err := tx.Query(ctx, `SELECT event_id, consumer_id FROM routes WHERE `+where+` ORDER BY next_at, event_id`,
		append([]any{now, nullID(sc.OrgID)}, args...)...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	seenEvent, seenConsumer := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var e, c string
		if err := rows.Scan(&e, &c); err != nil {
			return nil, nil, err
		}
		if !seenEvent[e] {
			if len(events) == max {
				break
			}
			seenEvent[e] = true
			events = append(events, e)
		}
		if !seenConsumer[c] {
			seenConsumer[c] = true
			consumers = append(consumers, c)
		}
	}
	rows.Close()
	return events, consumers, rows.Err()
}

// retryItems reads the events of ids, in that order.
func retryItems(ctx context.Context, tx pgx.Tx, ids []string) ([]intake.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.Event, error) { return scanEvent(row) })
	if err != nil {
		return nil, err
	}
	byID := make(map[string]intake.Event, len(found))
	for _, e := range found {
		byID[e.ID] = e
	}
	out := make([]intake.Event, 0, len(ids))
	for _, id := range ids {
		if e, ok := byID[id]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// RetryNow makes the waiting routes sel selects due now (DESIGN §20), by
// PostgreSQL's clock (see Options.CallerClock), and wakes the routers of
// every process.
func (s *Store) RetryNow(ctx context.Context, sc intake.Scope, sel intake.RetrySelection, now time.Time, max int, dryRun bool, audit ...intake.AuditEntry) (intake.Retried, error) {
	var out intake.Retried
	if (sel.EventID != "" && !validIDs(sel.EventID)) || (sel.ConsumerID != "" && !validIDs(sel.ConsumerID)) || !validIDs(sel.EventIDs...) {
		return out, nil
	}
	err := s.scopedTx(ctx, sc, func(tx pgx.Tx) error {
		out = intake.Retried{}
		events, consumers, err := retrySelected(ctx, tx, sc, sel, s.clockNow(now), max)
		if err != nil {
			return err
		}
		out.Count = len(events)
		if out.Items, err = retryItems(ctx, tx, events[:min(len(events), intake.RetryItems)]); err != nil {
			return err
		}
		if dryRun {
			return nil
		}
		if len(events) > 0 {
			where, args := retryWhere(sel)
			args = append([]any{s.clockNow(now), nullID(sc.OrgID)}, args...)
			args = append(args, events)
			if _, err := tx.Exec(ctx, `UPDATE routes SET next_at = coalesce($1::timestamptz, statement_timestamp())
				WHERE `+where+` AND next_at > coalesce($1::timestamptz, statement_timestamp())
				AND event_id = ANY($`+strconv.Itoa(len(args))+`::uuid[])`, args...); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE consumer_lanes SET probe_at = coalesce($1::timestamptz, statement_timestamp())
				WHERE tripped AND probe_at > coalesce($1::timestamptz, statement_timestamp()) AND consumer_id = ANY($2::uuid[])`,
				s.clockNow(now), consumers); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance); err != nil {
				return err
			}
		}
		for _, a := range audit {
			a = a.WithCount(out.Count)
			if _, err := tx.Exec(ctx, `INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				a.ID, nullID(a.OrgID), text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return intake.Retried{}, err
	}
	if out.Count > 0 && !dryRun {
		s.hub.Notify(intake.TopicRoutes)
	}
	return out, nil
}

// ConsumerStats counts a consumer's calls in each bucket of w ending at
// now, in one read: each bucket's counts and nearest-rank percentiles.
func (s *Store) ConsumerStats(ctx context.Context, sc intake.Scope, consumerID string, w intake.StatsWindow, now time.Time) ([]intake.DeliveryBucket, error) {
	start, width, n, err := w.Buckets(now)
	if err != nil {
		return nil, err
	}
	out := intake.EmptyBuckets(start, width, n)
	if !validIDs(consumerID) {
		return out, nil
	}
	err = s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT floor(extract(epoch FROM at - $2) / $4)::int,
				count(*) FILTER (WHERE outcome IN ('handled', 'ignored')), count(*) FILTER (WHERE outcome IN ('retry', 'dead')),
				percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us), percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
			FROM deliveries WHERE consumer_id = $1 AND at >= $2 AND at < $3 AND outcome IN ('handled', 'ignored', 'retry', 'dead')
			  AND ($5::uuid IS NULL OR org_id = $5)
			GROUP BY 1`, consumerID, ts(start), ts(start.Add(time.Duration(n)*width)), width.Seconds(), nullID(sc.OrgID)).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var i, delivered, failed int
					var p50, p99 int64
					if err := rows.Scan(&i, &delivered, &failed, &p50, &p99); err != nil {
						return err
					}
					if i < 0 || i >= n {
						continue
					}
					out[i].Delivered, out[i].Failed = delivered, failed
					out[i].P50, out[i].P99 = time.Duration(p50)*time.Microsecond, time.Duration(p99)*time.Microsecond
				}
				return rows.Err()
			})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ConsumerDeliveries lists a consumer's last limit delivery records, newest
// first.
func (s *Store) ConsumerDeliveries(ctx context.Context, sc intake.Scope, consumerID string, limit int) ([]intake.Delivery, error) {
	if !validIDs(consumerID) {
		return nil, nil
	}
	var out []intake.Delivery
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanDelivery, `SELECT `+deliveryFields+`
			FROM deliveries WHERE consumer_id = $1 AND ($2::uuid IS NULL OR org_id = $2) ORDER BY at DESC, id DESC LIMIT $3`,
			consumerID, nullID(sc.OrgID), limit)
	})
	return out, err
}

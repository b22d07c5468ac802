package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// Overview counts a window's originals by hour and state in one GROUP BY
// over messages_received, and the live work from the small partial indexes
// messages_live, events_counted_exactly, messages_due and events_due, in
// one round trip.
func (s *Store) Overview(ctx context.Context, sc intake.Scope, q intake.OverviewQuery) (intake.Overview, error) {
	out, err := intake.NewOverview(q)
	if err != nil {
		return out, err
	}
	org := nullID(sc.OrgID)
	var m, e, r *time.Time
	err = s.read(ctx, sc, func(b *pgx.Batch) {
		// date_bin, not arithmetic on epochs: numeric maths would cost more
		// than the scan.
		b.Queue(`SELECT date_bin('1 hour', received_at, $1), state, count(*) FROM messages
			WHERE received_at >= $1 AND received_at < $2 AND ($3::uuid IS NULL OR org_id = $3) AND replay_of IS NULL
			GROUP BY 1, 2`, ts(q.Since), ts(q.Since.Add(time.Duration(q.Hours)*time.Hour)), org).
			Query(func(rows pgx.Rows) error {
				var bin time.Time
				var n int
				var state intake.MessageState
				_, err := pgx.ForEachRow(rows, []any{&bin, &state, &n}, func() error {
					out.Hours[int(bin.Sub(q.Since)/time.Hour)][state] = n
					return nil
				})
				return err
			})
		b.Queue(`SELECT state, count(*), count(*) FILTER (WHERE state = 'queued' AND received_at < $2) FROM messages
			WHERE state IN ('queued', 'processing', 'failed') AND ($1::uuid IS NULL OR org_id = $1) GROUP BY state`,
			org, ts(q.QueuedBefore)).
			Query(func(rows pgx.Rows) error {
				var state intake.MessageState
				var n, before int
				_, err := pgx.ForEachRow(rows, []any{&state, &n, &before}, func() error {
					out.Live[state], out.QueuedBefore = n, out.QueuedBefore+before
					return nil
				})
				return err
			})
		b.Queue(`SELECT state, count(*) FROM events WHERE state IN (`+exactEventStates+`) AND ($1::uuid IS NULL OR org_id = $1)
			GROUP BY state`, org).
			Query(func(rows pgx.Rows) error {
				var state intake.EventState
				var n int
				_, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { out.Events[state] = n; return nil })
				return err
			})
		b.Queue(`SELECT min(next_attempt_at) FROM messages
			  WHERE state IN (`+claimable+`) AND next_attempt_at <= coalesce($2::timestamptz, statement_timestamp())
			    AND ($1::uuid IS NULL OR org_id = $1)`, org, s.clockNow(q.Now)).
			QueryRow(func(row pgx.Row) error { return row.Scan(&m) })
		b.Queue(`SELECT id::text, next_attempt_at FROM events
			  WHERE state IN ('pending', 'retrying') AND next_attempt_at <= coalesce($2::timestamptz, statement_timestamp())
			    AND ($1::uuid IS NULL OR org_id = $1)
			  ORDER BY next_attempt_at LIMIT 1`, org, s.clockNow(q.Now)).
			Query(func(rows pgx.Rows) error {
				_, err := pgx.ForEachRow(rows, []any{&out.OldestDueEventID, &e}, func() error { return nil })
				return err
			})
		b.Queue(`SELECT id::text, due FROM (SELECT c.id, (SELECT r.next_at FROM routes r
				WHERE r.consumer_id = c.id AND r.state = 'waiting' AND r.next_at <= coalesce($2::timestamptz, statement_timestamp())
				  AND (r.lease_until IS NULL OR r.lease_until <= coalesce($2::timestamptz, statement_timestamp()))
				ORDER BY r.next_at LIMIT 1) AS due
			  FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
			  WHERE NOT c.paused AND ($1::uuid IS NULL OR c.org_id = $1)
			    AND NOT (coalesce(l.tripped, false) AND l.probe_at > coalesce($2::timestamptz, statement_timestamp()))) d
			WHERE due IS NOT NULL ORDER BY due LIMIT 1`, org, s.clockNow(q.Now)).
			Query(func(rows pgx.Rows) error {
				_, err := pgx.ForEachRow(rows, []any{&out.OldestDueRouteConsumer, &r}, func() error { return nil })
				return err
			})
	})
	out.OldestDueMessage, out.OldestDueEvent, out.OldestDueRoute = fromTS(m), fromTS(e), fromTS(r)
	return out, err
}

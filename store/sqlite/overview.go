package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// Overview counts a window's originals of each state and hour as one range
// of messages_state_received: a count per range, with no rows read and
// none sorted, costs a fraction of one GROUP BY over the window. The same
// index holds the few live messages as the ranges of their states; open
// events come from the small partial index events_open.
func (s *Store) Overview(ctx context.Context, sc intake.Scope, q intake.OverviewQuery) (intake.Overview, error) {
	out, err := intake.NewOverview(q)
	if err != nil {
		return out, err
	}
	// One read transaction, so every figure is of the same moment.
	tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, classify(err)
	}
	defer tx.Rollback()

	err = each(ctx, tx, func(rows *sql.Rows) error {
		var h, n int
		var state intake.MessageState
		if err := rows.Scan(&h, &state, &n); err != nil {
			return err
		}
		if n > 0 {
			out.Hours[h][state] = n
		}
		return nil
	}, `WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < ?3 - 1),
		     s(state) AS (VALUES `+stateRows+`)
		SELECT h.i, s.state, (SELECT count(*) FROM messages INDEXED BY messages_state_received
		         WHERE state = s.state AND received_at >= ?1 + h.i * ?2 AND received_at < ?1 + (h.i + 1) * ?2
		           AND (?4 = '' OR org_id = ?4) AND replay_of = '')
		  FROM h, s`, ts(q.Since), time.Hour.Microseconds(), q.Hours, sc.OrgID)
	if err != nil {
		return out, err
	}
	err = each(ctx, tx, func(rows *sql.Rows) error {
		var state intake.MessageState
		var n, before int
		if err := rows.Scan(&state, &n, &before); err != nil {
			return err
		}
		out.Live[state], out.QueuedBefore = n, out.QueuedBefore+before
		return nil
	}, `SELECT state, count(*), count(*) FILTER (WHERE state = 'queued' AND received_at < ?2)
		FROM messages INDEXED BY messages_state_received
		WHERE state IN ('queued', 'processing', 'failed') AND (?1 = '' OR org_id = ?1) GROUP BY state`, sc.OrgID, ts(q.QueuedBefore))
	if err != nil {
		return out, err
	}
	err = each(ctx, tx, func(rows *sql.Rows) error {
		var state intake.EventState
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return err
		}
		out.Events[state] = n
		return nil
	}, `SELECT state, count(*) FROM events INDEXED BY events_open
		WHERE state IN ('pending', 'retrying', 'dead', 'no_consumer') AND (?1 = '' OR org_id = ?1) GROUP BY state`, sc.OrgID)
	if err != nil {
		return out, err
	}
	var m sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM messages
		  WHERE state IN (`+claimable+`) AND next_attempt_at <= ?2 AND (?1 = '' OR org_id = ?1)`, sc.OrgID, ts(q.Now)).
		Scan(&m); err != nil {
		return out, classify(err)
	}
	out.OldestDueMessage = fromTS(m)
	var e sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT id, next_attempt_at FROM events INDEXED BY events_due
		  WHERE state IN ('pending', 'retrying') AND next_attempt_at <= ?2 AND (?1 = '' OR org_id = ?1)
		  ORDER BY next_attempt_at LIMIT 1`, sc.OrgID, ts(q.Now)).Scan(&out.OldestDueEventID, &e)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return out, classify(err)
	}
	out.OldestDueEvent = fromTS(e)
	var r sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT id, due FROM (SELECT c.id, (SELECT r.next_at FROM routes r INDEXED BY routes_due
			WHERE r.consumer_id = c.id AND r.state = 'waiting' AND r.next_at <= ?2 AND (r.lease_until IS NULL OR r.lease_until <= ?2)
			ORDER BY r.next_at LIMIT 1) AS due
		FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
		WHERE c.paused = 0 AND (?1 = '' OR c.org_id = ?1) AND NOT (coalesce(l.tripped, 0) = 1 AND coalesce(l.probe_at, 0) > ?2))
		WHERE due IS NOT NULL ORDER BY due LIMIT 1`, sc.OrgID, ts(q.Now)).Scan(&out.OldestDueRouteConsumer, &r)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return out, classify(err)
	}
	out.OldestDueRoute = fromTS(r)
	return out, nil
}

// stateRows lists every message state as rows of a VALUES clause.
var stateRows = func() string {
	var rows []string
	for _, st := range intake.MessageStates {
		rows = append(rows, "('"+string(st)+"')")
	}
	return strings.Join(rows, ", ")
}()

// each runs a query in tx and hands every row to scan.
func each(ctx context.Context, tx *sql.Tx, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return classify(err)
		}
	}
	return classify(rows.Err())
}

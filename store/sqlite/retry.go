package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// retryWhere is the condition on routes a retry selection makes: waiting,
// not leased at now, visible in the org. Its arguments follow ?1 (now) and
// ?2 (the org).
func retryWhere(sel intake.RetrySelection) (string, []any) {
	where := `state = 'waiting' AND (lease_until IS NULL OR lease_until <= ?1) AND (?2 = '' OR org_id = ?2)`
	if sel.EventID != "" {
		return where + ` AND event_id = ?3`, []any{sel.EventID}
	}
	where += ` AND consumer_id = ?3`
	args := []any{sel.ConsumerID}
	if len(sel.EventIDs) > 0 {
		where += ` AND event_id IN (?` + strings.Repeat(", ?", len(sel.EventIDs)-1) + `)`
		for _, id := range sel.EventIDs {
			args = append(args, id)
		}
	}
	return where, args
}

// retrySelected reads the routes sel selects, of at most max events, the
// earliest due first: the events in that order and the consumers.
func retrySelected(ctx context.Context, q querier, sc intake.Scope, sel intake.RetrySelection, now time.Time, max int) (events, consumers []string, err error) {
	where, args := retryWhere(sel)
	rows, err := q.QueryContext(ctx, `SELECT event_id, consumer_id FROM routes WHERE `+where+` ORDER BY next_at, event_id`,
		append([]any{ts(now), sc.OrgID}, args...)...)
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
	return events, consumers, rows.Err()
}

// retryItems reads the events of ids, in that order.
func retryItems(ctx context.Context, q querier, ids []string) ([]intake.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[string]intake.Event{}
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		byID[e.ID] = e
	}
	out := make([]intake.Event, 0, len(ids))
	for _, id := range ids {
		if e, ok := byID[id]; ok {
			out = append(out, e)
		}
	}
	return out, rows.Err()
}

// RetryNow makes the waiting routes sel selects due now (DESIGN §20).
func (s *Store) RetryNow(ctx context.Context, sc intake.Scope, sel intake.RetrySelection, now time.Time, max int, dryRun bool, audit ...intake.AuditEntry) (intake.Retried, error) {
	var out intake.Retried
	if dryRun {
		tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return out, classify(err)
		}
		defer tx.Rollback()
		events, _, err := retrySelected(ctx, tx, sc, sel, now, max)
		if err != nil {
			return out, classify(err)
		}
		out.Count = len(events)
		out.Items, err = retryItems(ctx, tx, events[:min(len(events), intake.RetryItems)])
		return out, classify(err)
	}
	err := s.tx(ctx, func(tx *wtx) error {
		out = intake.Retried{}
		events, consumers, err := retrySelected(ctx, tx, sc, sel, now, max)
		if err != nil {
			return err
		}
		out.Count = len(events)
		if out.Items, err = retryItems(ctx, tx, events[:min(len(events), intake.RetryItems)]); err != nil {
			return err
		}
		if len(events) > 0 {
			where, args := retryWhere(sel)
			in := `(?` + strings.Repeat(", ?", len(events)-1) + `)`
			args = append([]any{ts(now), sc.OrgID}, args...)
			for _, id := range events {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE routes SET next_at = ?1 WHERE `+where+` AND next_at > ?1 AND event_id IN `+in, args...); err != nil {
				return err
			}
			args = []any{ts(now)}
			for _, id := range consumers {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE consumer_lanes SET probe_at = ?1 WHERE tripped = 1 AND probe_at > ?1
				AND consumer_id IN (?`+strings.Repeat(", ?", len(consumers)-1)+`)`, args...); err != nil {
				return err
			}
		}
		for _, a := range audit {
			a = a.WithCount(out.Count)
			if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.OrgID, a.Actor, a.Action, a.TargetType, a.TargetID, a.Detail, ts(a.At)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return intake.Retried{}, err
	}
	if out.Count > 0 {
		s.notifyRoutes()
	}
	return out, nil
}

// ConsumerStats counts a consumer's calls in each bucket of w ending at
// now, from its deliveries' index alone: the counts of every bucket in one
// pass, then each percentile by its rank in its bucket.
func (s *Store) ConsumerStats(ctx context.Context, sc intake.Scope, consumerID string, w intake.StatsWindow, now time.Time) ([]intake.DeliveryBucket, error) {
	start, width, n, err := w.Buckets(now)
	if err != nil {
		return nil, err
	}
	out := intake.EmptyBuckets(start, width, n)
	tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, classify(err)
	}
	defer tx.Rollback()
	// A consumer's deliveries are its org's: the scope is checked on the
	// consumer, so the deliveries are read from their index alone.
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM consumers WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, consumerID, sc.OrgID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return nil, classify(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT (at - ?2) / ?4, sum(outcome IN ('handled', 'ignored')), sum(outcome IN ('retry', 'dead'))
		FROM deliveries INDEXED BY deliveries_consumer_at
		WHERE consumer_id = ?1 AND at >= ?2 AND at < ?3 AND outcome IN ('handled', 'ignored', 'retry', 'dead') GROUP BY 1`,
		consumerID, ts(start), ts(start.Add(time.Duration(n)*width)), width.Microseconds())
	if err != nil {
		return nil, classify(err)
	}
	for rows.Next() {
		var i, delivered, failed int
		if err := rows.Scan(&i, &delivered, &failed); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		if i >= 0 && i < n {
			out[i].Delivered, out[i].Failed = delivered, failed
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	for i := range out {
		calls := out[i].Delivered + out[i].Failed
		if calls == 0 {
			continue
		}
		for _, q := range []struct {
			p   int
			out *time.Duration
		}{{50, &out[i].P50}, {99, &out[i].P99}} {
			var us int64
			err := tx.QueryRowContext(ctx, `SELECT latency_us FROM deliveries INDEXED BY deliveries_consumer_at
				WHERE consumer_id = ?1 AND at >= ?2 AND at < ?3 AND outcome IN ('handled', 'ignored', 'retry', 'dead')
				ORDER BY latency_us LIMIT 1 OFFSET ?4`, consumerID, ts(out[i].Start), ts(out[i].Start.Add(width)), intake.RankIndex(calls, q.p)).Scan(&us)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, classify(err)
			}
			*q.out = time.Duration(us) * time.Microsecond
		}
	}
	return out, nil
}

// ConsumerDeliveries lists a consumer's last limit delivery records, newest
// first.
func (s *Store) ConsumerDeliveries(ctx context.Context, sc intake.Scope, consumerID string, limit int) ([]intake.Delivery, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+deliveryColumns+`
		FROM deliveries INDEXED BY deliveries_consumer_at WHERE consumer_id = ?1 AND (?2 = '' OR org_id = ?2) ORDER BY at DESC, id DESC LIMIT ?3`,
		consumerID, sc.OrgID, limit)
	if err != nil {
		return nil, classify(err)
	}
	out, err := scanDeliveries(rows)
	return out, classify(err)
}

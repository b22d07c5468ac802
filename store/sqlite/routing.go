package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// CreateConsumer inserts a consumer; its org must exist.
func (s *Store) CreateConsumer(ctx context.Context, c intake.Consumer, audit ...intake.AuditEntry) error {
	types, err := json.Marshal(c.EventTypes)
	if err != nil {
		return err
	}
	return s.audited(ctx, audit, func(tx *wtx) error {
		if err := orgExists(ctx, tx, c.OrgID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO consumers (id, org_id, name, app, url, event_types, completion, enabled, sealed_secret, created_at,
			filter, transform, sealed_url, paused, rate_per_sec, max_in_flight, ordering, retry_attempts, retry_base_ms, breaker_failures, auto_disable_after_s)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append([]any{c.ID, c.OrgID, c.Name, c.App, c.URL, string(types), c.Completion, c.Enabled, c.SealedSecret, ts(c.CreatedAt), c.Filter,
				c.Transform, c.SealedURL}, controlArgs(c.Controls)...)...); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO consumer_lanes (consumer_id, org_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, c.ID, c.OrgID)
		tx.announce() // routers keep each org's consumers: a new one is seen at once
		return err
	})
}

const consumerColumns = `c.id, c.org_id, c.name, c.app, c.url, c.event_types, c.completion, c.enabled, c.sealed_secret, c.created_at,
	c.filter, c.transform, c.sealed_old_secret, c.old_secret_until, c.version, c.sealed_url, ` + controlColumns

func scanConsumer(row interface{ Scan(...any) error }) (intake.Consumer, error) {
	var c intake.Consumer
	var types string
	var created, oldUntil sql.NullInt64
	if err := scanControls(row, &c.Controls, &c.ID, &c.OrgID, &c.Name, &c.App, &c.URL, &types, &c.Completion, &c.Enabled, &c.SealedSecret, &created,
		&c.Filter, &c.Transform, &c.SealedOldSecret, &oldUntil, &c.Version, &c.SealedURL); err != nil {
		return c, err
	}
	c.CreatedAt, c.OldSecretUntil = fromTS(created), fromTS(oldUntil)
	return c, json.Unmarshal([]byte(types), &c.EventTypes)
}

// Consumer returns one consumer visible in sc.
func (s *Store) Consumer(ctx context.Context, sc intake.Scope, id string) (intake.Consumer, error) {
	c, err := scanConsumer(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+consumerColumns+` FROM consumers c WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound("consumer", id)
	}
	return c, err
}

// ListConsumers lists the consumers visible in sc.
func (s *Store) ListConsumers(ctx context.Context, sc intake.Scope) ([]intake.Consumer, error) {
	rows, err := s.reader(ctx).QueryContext(ctx,
		`SELECT `+consumerColumns+` FROM consumers c WHERE deleted_at IS NULL AND (?1 = '' OR org_id = ?1) ORDER BY id`, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Consumer
	for rows.Next() {
		c, err := scanConsumer(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// UpdateConsumer saves a consumer's settings (everything but its id, org,
// secret and creation time).
func (s *Store) UpdateConsumer(ctx context.Context, sc intake.Scope, c intake.Consumer, audit ...intake.AuditEntry) error {
	types, err := json.Marshal(c.EventTypes)
	if err != nil {
		return err
	}
	err = s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE consumers SET name = ?, app = ?, url = ?, event_types = ?, completion = ?, enabled = ?,
			filter = ?, transform = ?, sealed_url = ?, paused = ?, rate_per_sec = ?, max_in_flight = ?, ordering = ?, retry_attempts = ?, retry_base_ms = ?,
			breaker_failures = ?, auto_disable_after_s = ?, version = version + 1
			WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?) AND version = ?`,
			append(append([]any{c.Name, c.App, c.URL, string(types), c.Completion, c.Enabled, c.Filter, c.Transform, c.SealedURL}, controlArgs(c.Controls)...),
				c.ID, sc.OrgID, sc.OrgID, c.Version)...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notWritten(ctx, tx, "consumers", "consumer", c.ID, sc)
		}
		tx.announce()
		return nil
	})
	if err == nil {
		s.notifyRoutes() // a resume or a raised limit lets routes go
	}
	return err
}

// RotateConsumerSecret replaces a consumer's signing secret, keeping the
// old one beside it until oldUntil (zero: not at all).
func (s *Store) RotateConsumerSecret(ctx context.Context, sc intake.Scope, id string, sealedNew, sealedOld []byte, oldUntil time.Time,
	audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE consumers SET sealed_secret = ?, sealed_old_secret = ?, old_secret_until = ?, version = version + 1
			WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?)`, sealedNew, sealedOld, ts(oldUntil), id, sc.OrgID, sc.OrgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("consumer", id)
		}
		tx.announce()
		return nil
	})
}

// PutSubjectLink records or replaces the link of a provider object.
func (s *Store) PutSubjectLink(ctx context.Context, sc intake.Scope, l intake.SubjectLink, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		var org string
		err := tx.QueryRowContext(ctx, `SELECT org_id FROM connections WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR org_id = ?2)`,
			l.ConnectionID, sc.OrgID).Scan(&org)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("connection", l.ConnectionID)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO subject_links (id, org_id, connection_id, provider_object_id, app, record_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (connection_id, provider_object_id) DO UPDATE SET id = excluded.id, app = excluded.app, record_id = excluded.record_id,
				created_at = excluded.created_at`,
			l.ID, org, l.ConnectionID, l.ProviderObjectID, l.App, l.RecordID, ts(l.CreatedAt))
		return err
	})
}

// ClaimEvents takes due, unleased events as their next routing attempt.
func (s *Store) ClaimEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]intake.EventClaim, error) {
	var claims []intake.EventClaim
	err := s.tx(ctx, func(tx *wtx) error {
		rows, err := tx.QueryContext(ctx, claimEventsSQL, ts(now.Add(lease)), ts(now), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var lease sql.NullInt64
			e, err := scanEvent(rows, &lease)
			if err != nil {
				return err
			}
			claims = append(claims, intake.EventClaim{Event: e, Attempt: e.Attempt, LeaseUntil: fromTS(lease), Done: map[string]bool{}})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		return loadDone(ctx, tx, claims)
	})
	if err != nil {
		return nil, err // the claim did not commit: nothing is leased
	}
	return claims, nil
}

// loadDone fills in which consumers already handled or ignored each event:
// by its routes, or by its deliveries for events from before routes.
func loadDone(ctx context.Context, tx *wtx, claims []intake.EventClaim) error {
	if len(claims) == 0 {
		return nil
	}
	byID := make(map[string]*intake.EventClaim, len(claims))
	args := make([]any, 0, len(claims))
	for i := range claims {
		byID[claims[i].Event.ID] = &claims[i]
		args = append(args, claims[i].Event.ID)
	}
	in := `(?` + strings.Repeat(", ?", len(args)-1) + `)`
	rows, err := tx.QueryContext(ctx, `SELECT event_id, consumer_id FROM routes WHERE state IN ('handled', 'ignored') AND event_id IN `+in+`
		UNION SELECT event_id, consumer_id FROM deliveries WHERE outcome IN ('handled', 'ignored') AND event_id IN `+in, append(args, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var eventID, consumerID string
		if err := rows.Scan(&eventID, &consumerID); err != nil {
			return err
		}
		byID[eventID].Done[consumerID] = true
	}
	return rows.Err()
}

// RerouteEvent takes a dead or no_consumer event back to pending.
func (s *Store) RerouteEvent(ctx context.Context, sc intake.Scope, id string, now time.Time, audit ...intake.AuditEntry) error {
	err := s.audited(ctx, audit, func(tx *wtx) error { return rerouteEvent(ctx, tx, sc, id, now) })
	if err == nil {
		s.hub.Notify(intake.TopicEvents)
	}
	return err
}

// rerouteEvent takes an event visible in sc back to pending, in tx.
func rerouteEvent(ctx context.Context, tx *wtx, sc intake.Scope, id string, now time.Time) error {
	var state intake.EventState
	var attempt int
	err := tx.QueryRowContext(ctx, `SELECT state, attempt FROM events WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID).Scan(&state, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("event", id)
	}
	if err != nil {
		return err
	}
	max, err := intake.Reroute(state, attempt)
	if err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, `UPDATE events SET state = 'pending', max_attempts = ?, next_attempt_at = ?,
		lease_until = NULL WHERE id = ?`, max, ts(now), id); err != nil {
		return err
	}
	// The next fan-out selects again; the consumers done with the event
	// keep their routes and are not called again.
	_, err = tx.ExecContext(ctx, `DELETE FROM routes WHERE event_id = ? AND state NOT IN ('handled', 'ignored')`, id)
	return err
}

// Deliveries lists an event's delivery attempts, oldest first.
func (s *Store) Deliveries(ctx context.Context, sc intake.Scope, eventID string) ([]intake.Delivery, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+deliveryColumns+`
		FROM deliveries WHERE event_id = ?1 AND (?2 = '' OR org_id = ?2) ORDER BY id`, eventID, sc.OrgID)
	if err != nil {
		return nil, err
	}
	return scanDeliveries(rows)
}

// deliveryColumns are what scanDeliveries reads of each delivery row.
const deliveryColumns = `id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at, max_attempts, response`

// scanDeliveries reads rows of deliveryColumns and closes them.
func scanDeliveries(rows *sql.Rows) ([]intake.Delivery, error) {
	defer rows.Close()
	var out []intake.Delivery
	for rows.Next() {
		var d intake.Delivery
		var latency int64
		var at sql.NullInt64
		var response sql.NullString
		if err := rows.Scan(&d.ID, &d.OrgID, &d.EventID, &d.ConsumerID, &d.Attempt, &d.Outcome, &d.StatusCode, &latency, &d.Error, &at,
			&d.MaxAttempts, &response); err != nil {
			return nil, err
		}
		d.Latency, d.At = time.Duration(latency)*time.Microsecond, fromTS(at)
		if response.Valid {
			if err := json.Unmarshal([]byte(response.String), &d.Response); err != nil {
				return nil, fmt.Errorf("delivery %s: its answer: %w", d.ID, err)
			}
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// EventRoutes lists the routes of events visible in sc, by event and then
// consumer.
func (s *Store) EventRoutes(ctx context.Context, sc intake.Scope, eventIDs []string) ([]intake.Route, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	args := []any{sc.OrgID}
	for _, id := range eventIDs {
		args = append(args, id)
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT event_id, consumer_id, org_id, state, attempt, next_at, order_key, order_at, last_error, lease_until
		FROM routes WHERE (?1 = '' OR org_id = ?1) AND event_id IN (?`+strings.Repeat(", ?", len(eventIDs)-1)+`)
		ORDER BY event_id, consumer_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Route
	for rows.Next() {
		var r intake.Route
		var next, orderAt, lease sql.NullInt64
		if err := rows.Scan(&r.EventID, &r.ConsumerID, &r.OrgID, &r.State, &r.Attempt, &next, &r.OrderKey, &orderAt, &r.LastError, &lease); err != nil {
			return nil, err
		}
		r.NextAt, r.OrderAt, r.LeaseUntil = fromTS(next), fromTS(orderAt), fromTS(lease)
		out = append(out, r)
	}
	return out, rows.Err()
}

var claimEventsSQL = `UPDATE events
			SET attempt = attempt + 1, lease_until = ?1,
			    state = CASE WHEN lease_until IS NOT NULL THEN 'retrying' ELSE state END
			WHERE id IN (
				SELECT id FROM events
				 WHERE state IN ('pending', 'retrying') AND next_attempt_at <= ?2
				   AND (lease_until IS NULL OR lease_until <= ?2)
				 ORDER BY next_attempt_at LIMIT ?3)
			RETURNING ` + eventColumns + `, lease_until`

// MessageRequests returns the query and headers of the requests events
// came from, in one read.
func (s *Store) MessageRequests(ctx context.Context, messageIDs []string) (map[string]intake.OriginalRequest, error) {
	out := make(map[string]intake.OriginalRequest, len(messageIDs))
	if len(messageIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(messageIDs))
	for i, id := range messageIDs {
		args[i] = id
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT m.id, m.query, b.header FROM messages m LEFT JOIN message_bodies b ON b.message_id = m.id
		WHERE m.id IN (?`+strings.Repeat(", ?", len(args)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, query string
		var header sql.NullString
		if err := rows.Scan(&id, &query, &header); err != nil {
			return nil, err
		}
		r := intake.OriginalRequest{Query: query}
		if header.Valid {
			if err := json.Unmarshal([]byte(header.String), &r.Header); err != nil {
				return nil, err
			}
		}
		out[id] = r
	}
	return out, rows.Err()
}

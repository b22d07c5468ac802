package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// CreateConsumer inserts a consumer with its lane; its org must exist.
func (s *Store) CreateConsumer(ctx context.Context, c intake.Consumer, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		if err := orgExists(ctx, tx, c.OrgID); err != nil {
			return err
		}
		k := c.Controls
		_, err := tx.Exec(ctx, `WITH c AS (
				INSERT INTO consumers (id, org_id, name, app, url, event_types, completion, enabled, sealed_secret, created_at,
					filter, transform, `+controlColumns+`, sealed_url)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
				RETURNING id, org_id)
			INSERT INTO consumer_lanes (consumer_id, org_id) SELECT id, org_id FROM c`,
			c.ID, c.OrgID, c.Name, c.App, c.URL, texts(c.EventTypes), c.Completion, c.Enabled, c.SealedSecret, ts(c.CreatedAt),
			text(c.Filter), text(c.Transform),
			k.Paused, k.RatePerSec, k.MaxInFlight, text(k.Ordering), k.Retry.Attempts, k.Retry.Base.Milliseconds(), k.BreakerFailures,
			int64(k.AutoDisableAfter/time.Second), c.SealedURL)
		if err != nil {
			return err
		}
		return s.announce(ctx, tx) // routers keep each org's consumers: a new one is seen at once
	})
}

// controlColumns are a consumer's Controls, as scanControls reads them.
const controlColumns = `paused, rate_per_sec, max_in_flight, ordering, retry_attempts, retry_base_ms, breaker_failures, auto_disable_after_s`

// controlDests are the scan destinations of controlColumns; done converts
// the units once scanned.
func controlDests(k *intake.Controls) (dests []any, done func()) {
	var baseMS, disableS int64
	return []any{&k.Paused, &k.RatePerSec, &k.MaxInFlight, &k.Ordering, &k.Retry.Attempts, &baseMS, &k.BreakerFailures, &disableS},
		func() {
			k.Retry.Base = time.Duration(baseMS) * time.Millisecond
			k.AutoDisableAfter = time.Duration(disableS) * time.Second
		}
}

const consumerColumns = `id, org_id, name, app, url, event_types, completion, enabled, sealed_secret, created_at, filter, transform,
	sealed_old_secret, old_secret_until, version, sealed_url, ` + controlColumns

func scanConsumer(row pgx.Row) (intake.Consumer, error) {
	var c intake.Consumer
	var created, oldUntil *time.Time
	controls, done := controlDests(&c.Controls)
	err := row.Scan(append([]any{&c.ID, &c.OrgID, &c.Name, &c.App, &c.URL, &c.EventTypes, &c.Completion, &c.Enabled, &c.SealedSecret, &created,
		&c.Filter, &c.Transform, &c.SealedOldSecret, &oldUntil, &c.Version, &c.SealedURL}, controls...)...)
	c.CreatedAt, c.OldSecretUntil = fromTS(created), fromTS(oldUntil)
	done()
	return c, err
}

// Consumer returns one consumer visible in sc.
func (s *Store) Consumer(ctx context.Context, sc intake.Scope, consumerID string) (intake.Consumer, error) {
	var c intake.Consumer
	if !validIDs(consumerID) {
		return c, notFound("consumer", consumerID)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+consumerColumns+` FROM consumers WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, consumerID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { c, err = scanConsumer(row); return err })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("consumer", consumerID)
	}
	return c, err
}

// ListConsumers lists the consumers visible in sc.
func (s *Store) ListConsumers(ctx context.Context, sc intake.Scope) ([]intake.Consumer, error) {
	var out []intake.Consumer
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanConsumer,
			`SELECT `+consumerColumns+` FROM consumers WHERE deleted_at IS NULL AND ($1::uuid IS NULL OR org_id = $1) ORDER BY id`, nullID(sc.OrgID))
	})
	return out, err
}

// UpdateConsumer saves a consumer's settings (everything but its id, org,
// secret and creation time), and wakes the routers of every process: a
// resume or a raised limit lets held routes go.
func (s *Store) UpdateConsumer(ctx context.Context, sc intake.Scope, c intake.Consumer, audit ...intake.AuditEntry) error {
	if !validIDs(c.ID) {
		return notFound("consumer", c.ID)
	}
	k := c.Controls
	err := s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE consumers SET name = $1, app = $2, url = $3, event_types = $4, completion = $5, enabled = $6,
			filter = $7, transform = $8, paused = $11, rate_per_sec = $12, max_in_flight = $13, ordering = $14, retry_attempts = $15,
			retry_base_ms = $16, breaker_failures = $17, auto_disable_after_s = $18, sealed_url = $20, version = version + 1
			WHERE deleted_at IS NULL AND id = $9 AND ($10::uuid IS NULL OR org_id = $10) AND version = $19`,
			text(c.Name), text(c.App), text(c.URL), texts(c.EventTypes), c.Completion, c.Enabled, text(c.Filter), text(c.Transform),
			c.ID, nullID(sc.OrgID),
			k.Paused, k.RatePerSec, k.MaxInFlight, text(k.Ordering), k.Retry.Attempts, k.Retry.Base.Milliseconds(), k.BreakerFailures,
			int64(k.AutoDisableAfter/time.Second), c.Version, c.SealedURL)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notWritten(ctx, tx, "consumers", "consumer", c.ID, sc)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance); err != nil {
			return err
		}
		return s.announce(ctx, tx)
	})
	if err == nil {
		s.hub.Notify(intake.TopicRoutes)
	}
	return err
}

// RotateConsumerSecret replaces a consumer's signing secret, keeping the
// old one beside it until oldUntil (zero: not at all).
func (s *Store) RotateConsumerSecret(ctx context.Context, sc intake.Scope, id string, sealedNew, sealedOld []byte, oldUntil time.Time,
	audit ...intake.AuditEntry) error {
	if !validIDs(id) {
		return notFound("consumer", id)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE consumers SET sealed_secret = $1, sealed_old_secret = $2, old_secret_until = $3, version = version + 1
			WHERE deleted_at IS NULL AND id = $4 AND ($5::uuid IS NULL OR org_id = $5)`, sealedNew, sealedOld, ts(oldUntil), id, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("consumer", id)
		}
		return s.announce(ctx, tx)
	})
}

// PutSubjectLink records or replaces the link of a provider object.
func (s *Store) PutSubjectLink(ctx context.Context, sc intake.Scope, l intake.SubjectLink, audit ...intake.AuditEntry) error {
	if !validIDs(l.ConnectionID) {
		return notFound("connection", l.ConnectionID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		var org string
		err := tx.QueryRow(ctx, `SELECT org_id FROM connections WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR org_id = $2)`,
			l.ConnectionID, nullID(sc.OrgID)).Scan(&org)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("connection", l.ConnectionID)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO subject_links (id, org_id, connection_id, provider_object_id, app, record_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (connection_id, provider_object_id) DO UPDATE SET id = excluded.id, app = excluded.app,
				record_id = excluded.record_id, created_at = excluded.created_at`,
			l.ID, org, l.ConnectionID, text(l.ProviderObjectID), text(l.App), text(l.RecordID), ts(l.CreatedAt))
		return err
	})
}

// ClaimEvents takes due, unleased events not yet fanned out as their next
// routing attempt, in one statement that also reads who is done with
// each. An event whose previous lease ran out unsettled is taken as
// retrying. Rows another process holds are skipped. Leases are taken and
// judged, and events judged due, by PostgreSQL's clock (see
// Options.CallerClock).
func (s *Store) ClaimEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]intake.EventClaim, error) {
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT id FROM events
			 WHERE state IN ('pending', 'retrying') AND next_attempt_at IS NOT NULL AND next_attempt_at <= coalesce($2::timestamptz, statement_timestamp())
			   AND (lease_until IS NULL OR lease_until <= coalesce($4::timestamptz, statement_timestamp()))
			 ORDER BY next_attempt_at LIMIT $3
			   FOR UPDATE SKIP LOCKED
		), claimed AS (
			UPDATE events e SET attempt = e.attempt + 1,
			       lease_until = coalesce($4::timestamptz, statement_timestamp()) + $1::bigint * interval '1 microsecond',
			       state = CASE WHEN e.lease_until IS NOT NULL THEN 'retrying' ELSE e.state END
			  FROM due WHERE e.id = due.id
			RETURNING e.*
		)
		SELECT `+prefixed("e.", eventColumns)+`, e.lease_until,
		       ARRAY(SELECT consumer_id::text FROM routes WHERE event_id = e.id AND state IN ('handled', 'ignored')
		             UNION SELECT consumer_id::text FROM deliveries WHERE event_id = e.id AND outcome IN ('handled', 'ignored'))
		  FROM claimed e`, micros(lease), s.clockNow(now), limit, s.clockNow(now))
	if err != nil {
		return nil, classify(err)
	}
	claims, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.EventClaim, error) {
		var lease *time.Time
		var done []string
		e, err := scanEvent(row, &lease, &done)
		c := intake.EventClaim{Event: e, Attempt: e.Attempt, LeaseUntil: fromTS(lease), Done: make(map[string]bool, len(done))}
		for _, id := range done {
			c.Done[id] = true
		}
		return c, err
	})
	if err != nil || len(claims) == 0 {
		return nil, classify(err)
	}
	return claims, nil
}

// RerouteEvent takes a dead or no_consumer event back to pending, and wakes
// the routers of every process.
func (s *Store) RerouteEvent(ctx context.Context, sc intake.Scope, eventID string, now time.Time, audit ...intake.AuditEntry) error {
	if !validIDs(eventID) {
		return notFound("event", eventID)
	}
	err := s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		if err := rerouteEvent(ctx, tx, sc, eventID, s.clockNow(now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicEvents], s.instance)
		return err
	})
	if err == nil {
		s.hub.Notify(intake.TopicEvents)
	}
	return err
}

// rerouteEvent takes an event visible in sc back to pending, in tx, due
// at now (Store.clockNow: NULL, PostgreSQL's clock).
func rerouteEvent(ctx context.Context, tx pgx.Tx, sc intake.Scope, eventID string, now any) error {
	var state intake.EventState
	var attempt int
	err := tx.QueryRow(ctx, `SELECT state, attempt FROM events WHERE id = $1 AND ($2::uuid IS NULL OR org_id = $2) FOR UPDATE`,
		eventID, nullID(sc.OrgID)).Scan(&state, &attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("event", eventID)
	}
	if err != nil {
		return err
	}
	max, err := intake.Reroute(state, attempt)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE events SET state = 'pending', max_attempts = $1,
		next_attempt_at = coalesce($2::timestamptz, statement_timestamp()), lease_until = NULL WHERE id = $3`, max, now, eventID); err != nil {
		return err
	}
	// The next fan-out selects again; consumers done with the event keep
	// their routes and are not called again.
	_, err = tx.Exec(ctx, `DELETE FROM routes WHERE event_id = $1 AND state NOT IN ('handled', 'ignored')`, eventID)
	return err
}

// Deliveries lists an event's delivery attempts, oldest first.
func (s *Store) Deliveries(ctx context.Context, sc intake.Scope, eventID string) ([]intake.Delivery, error) {
	if !validIDs(eventID) {
		return nil, nil
	}
	var out []intake.Delivery
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanDelivery, `SELECT `+deliveryFields+`
			FROM deliveries WHERE event_id = $1 AND ($2::uuid IS NULL OR org_id = $2) ORDER BY id`, eventID, nullID(sc.OrgID))
	})
	return out, err
}

// EventRoutes lists the routes of events visible in sc, by event and then
// consumer.
func (s *Store) EventRoutes(ctx context.Context, sc intake.Scope, eventIDs []string) ([]intake.Route, error) {
	if len(eventIDs) == 0 || !validIDs(eventIDs...) {
		return nil, nil
	}
	var out []intake.Route
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanRoute, `SELECT event_id::text, consumer_id::text, org_id::text, state, attempt, next_at, order_key, order_at,
			       last_error, lease_until
			FROM routes WHERE event_id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR org_id = $2) ORDER BY event_id, consumer_id`,
			eventIDs, nullID(sc.OrgID))
	})
	return out, err
}

func scanRoute(row pgx.Row) (intake.Route, error) {
	var r intake.Route
	var next, orderAt, lease *time.Time
	err := row.Scan(&r.EventID, &r.ConsumerID, &r.OrgID, &r.State, &r.Attempt, &next, &r.OrderKey, &orderAt, &r.LastError, &lease)
	r.NextAt, r.OrderAt, r.LeaseUntil = fromTS(next), fromTS(orderAt), fromTS(lease)
	return r, err
}

// deliveryFields are what scanDelivery reads of a delivery row.
const deliveryFields = `id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at, max_attempts, response`

func scanDelivery(row pgx.Row) (intake.Delivery, error) {
	var d intake.Delivery
	var latency int64
	var at *time.Time
	var response *string
	err := row.Scan(&d.ID, &d.OrgID, &d.EventID, &d.ConsumerID, &d.Attempt, &d.Outcome, &d.StatusCode, &latency, &d.Error, &at,
		&d.MaxAttempts, &response)
	if err != nil {
		return d, err
	}
	d.Latency, d.At = time.Duration(latency)*time.Microsecond, fromTS(at)
	if response != nil {
		if err := json.Unmarshal([]byte(*response), &d.Response); err != nil {
			return d, fmt.Errorf("delivery %s: its answer: %w", d.ID, err)
		}
	}
	return d, nil
}

// MessageRequests returns the query and headers of the requests events
// came from, in one read.
func (s *Store) MessageRequests(ctx context.Context, messageIDs []string) (map[string]intake.OriginalRequest, error) {
	out := make(map[string]intake.OriginalRequest, len(messageIDs))
	if len(messageIDs) == 0 || !validIDs(messageIDs...) {
		return out, nil
	}
	type row struct {
		id     string
		query  string
		header []byte
	}
	var rows []row
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &rows, func(r pgx.Row) (row, error) {
			var x row
			err := r.Scan(&x.id, &x.query, &x.header)
			return x, err
		}, `SELECT m.id, m.query, b.header FROM messages m LEFT JOIN message_bodies b ON b.message_id = m.id WHERE m.id = ANY($1::uuid[])`, messageIDs)
	})
	if err != nil {
		return nil, err
	}
	for _, x := range rows {
		r := intake.OriginalRequest{Query: x.query}
		if x.header != nil {
			if err := json.Unmarshal(x.header, &r.Header); err != nil {
				return nil, err
			}
		}
		out[x.id] = r
	}
	return out, nil
}

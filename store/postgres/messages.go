package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/claimbody"
	"github.com/intakehq/intake/store/internal/keyset"
	"github.com/intakehq/intake/store/internal/sqltext"
)

// claimable is the SQL list of states the transition table lets a claim
// move to processing from. It is written into the query literally, so the
// planner matches it to the messages_due partial index.
var claimable = sqltext.List(intake.MessageStatesInto(intake.MessageProcessing))

// ClaimMessages takes processing messages whose lease expired, then due
// ones, as their next numbered attempt. Rows another process is claiming
// or settling right now are skipped, not waited for. The claim is one
// statement, committed on its own; the bodies are read after it (they do
// not change), so a claim that finds nothing costs one round trip. Leases
// are taken and judged, and messages judged due, by PostgreSQL's clock
// (see Options.CallerClock).
func (s *Store) ClaimMessages(ctx context.Context, now time.Time, lease time.Duration, limit int, skip ...string) ([]intake.Claim, error) {
	rows, err := s.pool.Query(ctx, `WITH expired AS (
			SELECT id FROM messages
			 WHERE state = 'processing' AND lease_until <= coalesce($5::timestamptz, statement_timestamp())
			   AND org_id <> ALL($4::uuid[])
			 ORDER BY lease_until LIMIT $3
			   FOR UPDATE SKIP LOCKED
		), due AS (
			SELECT id FROM messages
			 WHERE state IN (`+claimable+`) AND next_attempt_at <= coalesce($2::timestamptz, statement_timestamp()) AND org_id <> ALL($4::uuid[])
			 ORDER BY next_attempt_at LIMIT $3
			   FOR UPDATE SKIP LOCKED
		), picked AS (
			(SELECT id FROM expired UNION ALL SELECT id FROM due) LIMIT $3
		)
		UPDATE messages m SET state = 'processing', attempt = m.attempt + 1,
		       lease_until = coalesce($5::timestamptz, statement_timestamp()) + $1::bigint * interval '1 microsecond'
		  FROM picked WHERE m.id = picked.id
		RETURNING `+prefixed("m.", messageColumns), micros(lease), s.clockNow(now), limit, nonNil(skip), s.clockNow(now))
	if err != nil {
		return nil, classify(err)
	}
	claims, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.Claim, error) {
		m, err := scanMessage(row)
		return intake.Claim{Message: m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil}, err
	})
	if err == nil {
		err = loadBodies(ctx, s.pool, claims)
	}
	if err != nil || len(claims) == 0 {
		// Claimed messages not handed out are taken again once their
		// leases run out.
		return nil, classify(err)
	}
	return claims, nil
}

// loadBodies fills in each claimed message's stored request, or marks it
// expired.
func loadBodies(ctx context.Context, q querier, claims []intake.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	b := claimbody.New(claims)
	rows, err := q.Query(ctx, `SELECT message_id, header, CASE WHEN octet_length(body) <= $2 THEN body END, blob_key,
		coalesce(octet_length(body), 0) FROM message_bodies WHERE message_id = ANY($1::uuid[])`, b.IDs(), intake.ClaimBodyLimit)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var mid, blobKey string
		var header, body []byte
		var size int64
		if err := rows.Scan(&mid, &header, &body, &blobKey, &size); err != nil {
			return err
		}
		if blobKey == "" && size > intake.ClaimBodyLimit {
			err = b.Defer(mid, header, size)
		} else {
			if blobKey != "" {
				body = nil
			}
			err = b.Fill(mid, header, body, blobKey)
		}
		if err != nil {
			return err
		}
	}
	return rows.Err()
}

// MessageAttempts lists a message's settled attempts, oldest first.
func (s *Store) MessageAttempts(ctx context.Context, sc intake.Scope, msgID string) ([]intake.Attempt, error) {
	var out []intake.Attempt
	if !validIDs(msgID) {
		return nil, nil
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, func(row pgx.Row) (intake.Attempt, error) {
			var a intake.Attempt
			var at *time.Time
			err := row.Scan(&a.Attempt, &a.State, &a.Outcome, &a.ErrorCode, &a.ErrorMessage, &at)
			a.At = fromTS(at)
			return a, err
		}, `SELECT attempt, state, outcome, error_code, error_message, at FROM message_attempts
			WHERE message_id = $1 AND ($2::uuid IS NULL OR org_id = $2) ORDER BY attempt`, msgID, nullID(sc.OrgID))
	})
	return out, err
}

// ReleaseMessage ends a lease; after the delay (by PostgreSQL's clock) any
// worker of any process claims the message as the same attempt again.
func (s *Store) ReleaseMessage(ctx context.Context, now time.Time, after time.Duration, msgID string, attempt int) error {
	if !validIDs(msgID) {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE messages SET lease_until = coalesce($4::timestamptz, statement_timestamp()) + $1::bigint * interval '1 microsecond',
			attempt = attempt - 1 WHERE id = $2 AND attempt = $3 AND state = 'processing'`,
			micros(after), msgID, attempt, s.clockNow(now))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicMessages], s.instance)
		return err
	})
	if err == nil {
		s.hub.Notify(intake.TopicMessages)
	}
	return err
}

const messageColumns = `id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt,
	max_attempts, next_attempt_at, lease_until, provider_event_id, outcome, error_code, error_message, replay_of,
	traceparent`

func scanMessage(row pgx.Row) (intake.Message, error) {
	var m intake.Message
	var received, next, lease *time.Time
	var replayOf *string
	err := row.Scan(&m.ID, &m.OrgID, &m.ConnectionID, &m.EndpointID, &m.Method, &m.Query, &m.Digest, &received,
		&m.State, &m.Attempt, &m.MaxAttempts, &next, &lease, &m.ProviderEventID, &m.Outcome, &m.ErrorCode,
		&m.ErrorMessage, &replayOf, &m.TraceParent)
	m.ReceivedAt, m.NextAttemptAt, m.LeaseUntil, m.ReplayOf = fromTS(received), fromTS(next), fromTS(lease), fromID(replayOf)
	return m, err
}

// Message returns one message visible in sc, with its headers and event ids
// (not its body).
func (s *Store) Message(ctx context.Context, sc intake.Scope, msgID string) (intake.Message, error) {
	var m intake.Message
	if !validIDs(msgID) {
		return m, notFound("message", msgID)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+messageColumns+` FROM messages WHERE id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, msgID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { m, err = scanMessage(row); return err })
		b.Queue(`SELECT header FROM message_bodies WHERE message_id = $1`, msgID).QueryRow(func(row pgx.Row) error {
			var header []byte
			err := row.Scan(&header)
			if errors.Is(err, pgx.ErrNoRows) {
				m.BodyExpired = true
				return nil
			}
			if err != nil {
				return err
			}
			return json.Unmarshal(header, &m.Header)
		})
		queueRows(b, &m.EventIDs, scanString, `SELECT id FROM events WHERE message_id = $1 ORDER BY id`, msgID)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return m, notFound("message", msgID)
	}
	if len(m.EventIDs) == 0 {
		m.EventIDs = nil
	}
	return m, err
}

func scanString(row pgx.Row) (string, error) {
	var v string
	return v, row.Scan(&v)
}

// MessageBody returns the stored request of a message visible in sc.
func (s *Store) MessageBody(ctx context.Context, sc intake.Scope, msgID string) (intake.StoredBody, error) {
	var sb intake.StoredBody
	if !validIDs(msgID) {
		return sb, notFound("message body", msgID)
	}
	var header []byte
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT b.header, b.body, b.blob_key FROM message_bodies b JOIN messages m ON m.id = b.message_id
			WHERE b.message_id = $1 AND ($2::uuid IS NULL OR m.org_id = $2)`, msgID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) error { return row.Scan(&header, &sb.Body, &sb.BlobKey) })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sb, notFound("message body", msgID)
	}
	if err != nil {
		return sb, err
	}
	if err := json.Unmarshal(header, &sb.Header); err != nil {
		return sb, err
	}
	switch {
	case sb.BlobKey != "":
		sb.Body = nil
	case sb.Body == nil:
		sb.Body = []byte{}
	}
	return sb, nil
}

// messageWhere is the filter of f that ListMessages and CountMessages
// share; its parameters are messageArgs, $1 to $13. A message's type and
// match are its events' (one event must have both: its match judged in its
// event_search row, joined only for a match), its words its body's.
func messageWhere(f intake.MessageFilter) string {
	if f.Search.Match.IsZero() {
		return messageFilter + messageEvents + messageWords
	}
	return messageFilter + messageMatched + messageWords
}

// The parts of messageWhere: a message's own columns; its events' type, or
// their type and match; its body's words.
const (
	messageFilter = `($1::uuid IS NULL OR org_id = $1) AND ($2::uuid IS NULL OR endpoint_id = $2) AND ($3 = '' OR state = $3)
	AND ($4::timestamptz IS NULL OR received_at >= $4) AND ($5::timestamptz IS NULL OR received_at < $5)
	AND (NOT $6 OR replay_of IS NULL) AND ($7 = '' OR provider_event_id = $7)`
	messageEvents = `
	AND ($8 = '' AND $9::jsonb IS NULL OR EXISTS (SELECT 1 FROM events e WHERE e.message_id = messages.id
		AND ($8 = '' OR e.type = $8)))`
	messageMatched = `
	AND ($8 = '' AND $9::jsonb IS NULL OR EXISTS (SELECT 1 FROM events e JOIN event_search s ON s.event_id = e.id
		WHERE e.message_id = messages.id AND ($8 = '' OR e.type = $8) AND intake_jsonb(s.data) @> $9))`
)

var messageWords = `
	AND ($10 = '' OR EXISTS (SELECT 1 FROM message_bodies b WHERE b.message_id = messages.id
		AND (b.searchable AND ` + bodyText + ` ILIKE $10 OR NOT b.searchable) AND ` + bodyText + ` ILIKE ALL ($11::text[])))`

func messageArgs(sc intake.Scope, f intake.MessageFilter) []any {
	a := newSearchArgs(f.Search, true)
	return []any{nullID(sc.OrgID), nullID(f.EndpointID), string(f.State), ts(f.Since), ts(f.Until), f.Originals, text(f.ProviderEventID),
		text(f.Type), a.match, a.lead, a.patterns}
}

// ListMessages lists messages newest first, a page at a time.
func (s *Store) ListMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (intake.Page[intake.Message], error) {
	var page intake.Page[intake.Message]
	if !validIDs(f.EndpointID) && f.EndpointID != "" {
		return page, nil
	}
	if f.Cursor != "" && !validIDs(f.Cursor) {
		return page, intake.Errorf(intake.EINVALID, "malformed cursor")
	}
	limit := intake.PageLimit(f.Limit)
	args := append(messageArgs(sc, f), nullID(f.Cursor), limit+1)
	var err error
	if searched(f) && !sc.Staff() {
		page.Items, err = searchScoped(ctx, s, sc, `SELECT id FROM messages WHERE `+messageWhere(f)+` AND ($12::uuid IS NULL OR id < $12)
			ORDER BY id DESC LIMIT $13`, args, `SELECT `+messageColumns+` FROM messages WHERE id = ANY(`+foundIDs+`) ORDER BY id DESC`, scanMessage)
	} else {
		err = s.readPlanned(ctx, sc, func(b *pgx.Batch) {
			queueRows(b, &page.Items, scanMessage, `SELECT `+messageColumns+` FROM messages
				WHERE `+messageWhere(f)+` AND ($12::uuid IS NULL OR id < $12)
				ORDER BY id DESC LIMIT $13`, args...)
		})
	}
	page = keyset.Page(page.Items, limit)
	return page, err
}

// searched reports whether f searches messages by their events or bodies,
// which in an org's scope is read as searchScoped says.
func searched(f intake.MessageFilter) bool { return !f.Search.IsZero() || f.Type != "" }

// CountMessages counts the messages f selects. A search's count in an
// org's scope is made as the owner, the org named in the query, for the
// reason searchScoped gives; it shows a number, never a row.
func (s *Store) CountMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (int, error) {
	var n int
	if !validIDs(f.EndpointID) && f.EndpointID != "" {
		return 0, nil
	}
	counted := sc
	if searched(f) {
		counted = intake.Scope{}
	}
	err := s.readPlanned(ctx, counted, func(b *pgx.Batch) {
		b.Queue(`SELECT count(*) FROM messages WHERE `+messageWhere(f), messageArgs(sc, f)...).
			QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	})
	return n, err
}

// settledStates are the states no transition leaves.
const settledStates = `'processed', 'ignored', 'dead'`

// resumeAt is where one of retention's walks resumes: the received_at of
// the last row its previous batch deleted. Each walk goes oldest first
// through an index on received_at; resuming past the rows it deleted keeps
// it from reading their dead index entries again, batch after batch, until
// a vacuum clears them (a day of ten million leaves that many). A batch
// short of its limit ends the pass: the next starts from the oldest again,
// and finds what the pass skipped (rows in flight, or locked).
type resumeAt struct {
	mu sync.Mutex
	at time.Time
}

// from returns where the walk resumes: -infinity at a pass's start.
func (w *resumeAt) from() pgtype.Timestamptz {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return timestamptz(w.at)
}

// done records a batch of n rows of limit whose last was received at last.
func (w *resumeAt) done(n, limit int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n < limit {
		last = time.Time{}
	}
	w.at = last
}

// DropBodies deletes old bodies of settled messages, oldest first (see
// resumeAt).
func (s *Store) DropBodies(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	var n int
	var last time.Time
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		n, last, err = deleteBodies(ctx, tx, now, `DELETE FROM message_bodies WHERE message_id IN (
			SELECT b.message_id FROM message_bodies b JOIN messages m ON m.id = b.message_id JOIN orgs o ON o.id = b.org_id
			 WHERE b.received_at >= $4
			   AND b.received_at < $1::timestamptz - make_interval(secs => (SELECT min(v) FROM (SELECT $2::bigint AS v UNION ALL
			       SELECT body_retention_us FROM orgs WHERE body_retention_us IS NOT NULL) x) / 1e6)
			   AND b.received_at < $1::timestamptz - make_interval(secs => coalesce(o.body_retention_us, $2::bigint) / 1e6)
			   AND m.state IN (`+settledStates+`)
			 ORDER BY b.received_at
			 LIMIT $3
			   FOR UPDATE OF b SKIP LOCKED)
			RETURNING blob_key, org_id, received_at`, ts(now), def.Microseconds(), limit, s.bodiesWalk.from())
		return err
	})
	if err == nil {
		s.bodiesWalk.done(n, limit, last)
	}
	return n, err
}

// EraseBodies deletes an endpoint's bodies in a time range, on its org's
// request; the messages and their identities stay.
func (s *Store) EraseBodies(ctx context.Context, now time.Time, sc intake.Scope, endpointID string, since, until time.Time, audit ...intake.AuditEntry) (int, error) {
	if !validIDs(endpointID) {
		return 0, notFound("endpoint", endpointID)
	}
	var n int
	err := s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM endpoints WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR org_id = $2)`,
			endpointID, nullID(sc.OrgID)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("endpoint", endpointID)
		}
		if err != nil {
			return err
		}
		n, _, err = deleteBodies(ctx, tx, now, `DELETE FROM message_bodies WHERE message_id IN (
			SELECT id FROM messages WHERE endpoint_id = $1 AND received_at >= $2 AND received_at < $3)
			RETURNING blob_key, org_id, received_at`, endpointID, ts(since), ts(until))
		return err
	})
	return n, err
}

// DeleteSettled deletes old settled messages and all that hangs off them,
// oldest first (see resumeAt).
func (s *Store) DeleteSettled(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	var n int
	var last time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Notices are metadata: they go after the same retention.
		if _, err := tx.Exec(ctx, `DELETE FROM notices WHERE id IN (
			SELECT n.id FROM notices n JOIN orgs o ON o.id = n.org_id
			 WHERE n.at < $1::timestamptz - make_interval(secs => coalesce(o.retention_us, $2::bigint) / 1e6)
			 LIMIT $3)`, ts(now), def.Microseconds(), limit); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT m.id, m.received_at FROM messages m JOIN orgs o ON o.id = m.org_id
			WHERE m.received_at >= $4
			  AND m.received_at < $1::timestamptz - make_interval(secs => (SELECT min(v) FROM (SELECT $2::bigint AS v UNION ALL
			      SELECT retention_us FROM orgs WHERE retention_us IS NOT NULL) x) / 1e6)
			  AND m.received_at < $1::timestamptz - make_interval(secs => coalesce(o.retention_us, $2::bigint) / 1e6)
			  AND m.state IN (`+settledStates+`)
			  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.message_id = m.id AND e.state IN ('pending', 'retrying'))
			ORDER BY m.received_at
			LIMIT $3
			  FOR UPDATE OF m SKIP LOCKED`, ts(now), def.Microseconds(), limit, s.messagesWalk.from())
		if err != nil {
			return err
		}
		var ids []string
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id, &last}, func() error { ids = append(ids, id); return nil }); err != nil || len(ids) == 0 {
			return err
		}
		b := &pgx.Batch{}
		for _, q := range []string{
			`DELETE FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE message_id = ANY($1::uuid[]))`,
			`DELETE FROM issue_events WHERE item_id IN (SELECT id FROM events WHERE message_id = ANY($1::uuid[]))`,
			`DELETE FROM issue_events WHERE item_id = ANY($1::uuid[])`,
			`DELETE FROM routes WHERE event_id IN (SELECT id FROM events WHERE message_id = ANY($1::uuid[]))`,
			`DELETE FROM events WHERE message_id = ANY($1::uuid[])`,
			`DELETE FROM message_identities WHERE message_id = ANY($1::uuid[])`,
			`DELETE FROM message_attempts WHERE message_id = ANY($1::uuid[])`,
		} {
			b.Queue(q, ids)
		}
		// The bodies go before their messages (they reference them),
		// recording their objects as pending deletes.
		b.Queue(`WITH gone AS (DELETE FROM message_bodies WHERE message_id = ANY($1::uuid[]) RETURNING blob_key, org_id)
			`+recordBlobDeletes("$2"), ids, ts(now))
		b.Queue(`DELETE FROM messages WHERE id = ANY($1::uuid[])`, ids)
		n = len(ids)
		return tx.SendBatch(ctx, b).Close()
	})
	if err == nil {
		s.messagesWalk.done(n, limit, last)
	}
	return n, err
}

// deleteBodies runs query, a DELETE of message_bodies RETURNING blob_key,
// org_id, received_at, and records the keys of the deleted bodies' objects
// as pending deletes at now in the same transaction. It returns how many
// bodies it deleted, and when the latest was received.
func deleteBodies(ctx context.Context, tx pgx.Tx, now time.Time, query string, args ...any) (int, time.Time, error) {
	var n int
	var last *time.Time
	args = append(args, ts(now))
	err := tx.QueryRow(ctx, `WITH gone AS (`+query+`),
		pending AS (`+recordBlobDeletes("$"+strconv.Itoa(len(args)))+`)
		SELECT count(*), max(received_at) FROM gone`, args...).Scan(&n, &last)
	return n, fromTS(last), err
}

// recordBlobDeletes inserts the objects of the bodies in gone (blob_key,
// org_id) as pending deletes recorded at the parameter now; a key pending
// already keeps the later time: a store restored to any time before it
// named the object.
func recordBlobDeletes(now string) string {
	return `INSERT INTO blob_deletes (key, org_id, recorded_at)
		SELECT DISTINCT ON (blob_key) blob_key, org_id, ` + now + `::timestamptz FROM gone WHERE blob_key <> ''
		ON CONFLICT (key) DO UPDATE SET recorded_at = greatest(blob_deletes.recorded_at, excluded.recorded_at)`
}

// BlobsReferenced reports which of keys a stored body names.
func (s *Store) BlobsReferenced(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT blob_key FROM message_bodies WHERE blob_key <> '' AND blob_key = ANY($1::text[])`, keys)
	if err != nil {
		return nil, classify(err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, k := range found {
		out[k] = true
	}
	return out, classify(err)
}

// PendingBlobDeletes lists keys whose bodies were deleted, those recorded
// longest ago first; with before set, only those recorded before it.
func (s *Store) PendingBlobDeletes(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT key FROM blob_deletes WHERE $1::timestamptz IS NULL OR recorded_at < $1
		ORDER BY recorded_at, key LIMIT $2`, ts(before), limit)
	if err != nil {
		return nil, classify(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, classify(err)
}

// ForgetBlobDeletes removes keys from the pending deletes.
func (s *Store) ForgetBlobDeletes(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM blob_deletes WHERE key = ANY($1::text[])`, keys)
	return classify(err)
}

// prefixed qualifies each of a column list's names with a table alias.
func prefixed(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/claimbody"
	"github.com/intakehq/intake/store/internal/keyset"
	"github.com/intakehq/intake/store/internal/sqltext"
)

// claimable is the SQL list of states the transition table lets a claim
// move to processing from.
var claimable = sqltext.List(intake.MessageStatesInto(intake.MessageProcessing))

// ClaimMessages takes due messages, and processing ones whose lease expired,
// as their next numbered attempt.
func (s *Store) ClaimMessages(ctx context.Context, now time.Time, lease time.Duration, limit int, skip ...string) ([]intake.Claim, error) {
	if skip == nil {
		skip = []string{} // json_each of null would skip every org
	}
	skipped, err := json.Marshal(skip)
	if err != nil {
		return nil, err
	}
	var claims []intake.Claim
	err = s.tx(ctx, func(tx *wtx) error {
		rows, err := tx.QueryContext(ctx, claimMessagesSQL, ts(now.Add(lease)), ts(now), limit, string(skipped))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			claims = append(claims, intake.Claim{Message: m, Attempt: m.Attempt, LeaseUntil: m.LeaseUntil})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err // the claim did not commit: nothing is leased
	}
	// Bodies never change while a message is claimed, so they are read
	// after the commit, from the read pool, in one query: the single
	// writer does not wait on them. If this read fails, nothing is handed
	// out and the leases run out.
	if err := s.loadBodies(ctx, claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// loadBodies fills in the stored request of each claimed message; one
// whose body is gone is marked expired.
func (s *Store) loadBodies(ctx context.Context, claims []intake.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	b := claimbody.New(claims)
	args := make([]any, 0, 1+len(claims))
	args = append(args, intake.ClaimBodyLimit)
	for _, id := range b.IDs() {
		args = append(args, id)
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT message_id, header,
		CASE WHEN length(body) <= ?1 THEN body END, blob_key, coalesce(length(body), 0)
		FROM message_bodies WHERE message_id IN (?`+strings.Repeat(", ?", len(claims)-1)+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, header, blobKey string
		var body []byte
		var size int64
		if err := rows.Scan(&id, &header, &body, &blobKey, &size); err != nil {
			return err
		}
		if blobKey == "" && size > intake.ClaimBodyLimit {
			err = b.Defer(id, []byte(header), size)
		} else {
			if blobKey != "" {
				body = nil
			}
			err = b.Fill(id, []byte(header), body, blobKey)
		}
		if err != nil {
			return err
		}
	}
	return rows.Err()
}

// MessageAttempts lists a message's settled attempts, oldest first.
func (s *Store) MessageAttempts(ctx context.Context, sc intake.Scope, id string) ([]intake.Attempt, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT a.attempt, a.state, a.outcome, a.error_code, a.error_message, a.at
		FROM message_attempts a JOIN messages m ON m.id = a.message_id
		WHERE a.message_id = ?1 AND (?2 = '' OR m.org_id = ?2) ORDER BY a.attempt`, id, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Attempt
	for rows.Next() {
		var a intake.Attempt
		var at sql.NullInt64
		if err := rows.Scan(&a.Attempt, &a.State, &a.Outcome, &a.ErrorCode, &a.ErrorMessage, &at); err != nil {
			return nil, err
		}
		a.At = fromTS(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// ReleaseMessage ends a lease; from now+after on any worker claims the
// message as the same attempt again.
func (s *Store) ReleaseMessage(ctx context.Context, now time.Time, after time.Duration, id string, attempt int) error {
	err := s.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE messages SET lease_until = ?, attempt = attempt - 1 WHERE id = ? AND attempt = ? AND state = 'processing'`,
			ts(now.Add(after)), id, attempt)
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

func scanMessage(row interface{ Scan(...any) error }) (intake.Message, error) {
	var m intake.Message
	var received, next, lease sql.NullInt64
	err := row.Scan(&m.ID, &m.OrgID, &m.ConnectionID, &m.EndpointID, &m.Method, &m.Query, &m.Digest, &received,
		&m.State, &m.Attempt, &m.MaxAttempts, &next, &lease, &m.ProviderEventID, &m.Outcome, &m.ErrorCode,
		&m.ErrorMessage, &m.ReplayOf, &m.TraceParent)
	m.ReceivedAt, m.NextAttemptAt, m.LeaseUntil = fromTS(received), fromTS(next), fromTS(lease)
	return m, err
}

// Message returns one message visible in sc, with its headers and event ids
// (not its body).
func (s *Store) Message(ctx context.Context, sc intake.Scope, id string) (intake.Message, error) {
	// One read transaction: a settle writes the message's state and its
	// events at once, and a read shows both or neither.
	tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return intake.Message{}, classify(err)
	}
	defer tx.Rollback()
	m, err := scanMessage(tx.QueryRowContext(ctx,
		`SELECT `+messageColumns+` FROM messages WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return m, notFound("message", id)
	}
	if err != nil {
		return m, err
	}
	var header sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT header FROM message_bodies WHERE message_id = ?`, id).Scan(&header)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		m.BodyExpired = true
	case err != nil:
		return m, err
	default:
		if err := json.Unmarshal([]byte(header.String), &m.Header); err != nil {
			return m, err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM events WHERE message_id = ? ORDER BY id`, id)
	if err != nil {
		return m, err
	}
	defer rows.Close()
	for rows.Next() {
		var eid string
		if err := rows.Scan(&eid); err != nil {
			return m, err
		}
		m.EventIDs = append(m.EventIDs, eid)
	}
	return m, rows.Err()
}

// MessageBody returns the stored request of a message visible in sc.
func (s *Store) MessageBody(ctx context.Context, sc intake.Scope, id string) (intake.StoredBody, error) {
	var header string
	var b intake.StoredBody
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT b.header, b.body, b.blob_key FROM message_bodies b JOIN messages m ON m.id = b.message_id
		WHERE b.message_id = ?1 AND (?2 = '' OR m.org_id = ?2)`, id, sc.OrgID).Scan(&header, &b.Body, &b.BlobKey)
	if errors.Is(err, sql.ErrNoRows) {
		return b, notFound("message body", id)
	}
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(header), &b.Header); err != nil {
		return b, err
	}
	switch {
	case b.BlobKey != "":
		b.Body = nil
	case b.Body == nil:
		b.Body = []byte{}
	}
	return b, nil
}

// ListMessages lists messages newest first, a page at a time.
func (s *Store) ListMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (intake.Page[intake.Message], error) {
	limit := intake.PageLimit(f.Limit)
	drive, args, err := s.messageArgs(ctx, sc, f)
	if err != nil {
		return intake.Page[intake.Message]{}, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE `+drive+messageFilterSQL+`
		AND (:cursor = '' OR id < :cursor) ORDER BY id DESC LIMIT :limit`,
		append(args, sql.Named("cursor", f.Cursor), sql.Named("limit", limit+1))...)
	if err != nil {
		return intake.Page[intake.Message]{}, err
	}
	defer rows.Close()
	var page intake.Page[intake.Message]
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, m)
	}
	page = keyset.Page(page.Items, limit)
	return page, rows.Err()
}

// messageFilterSQL is what a messages list selects by, its search judged
// on each message's rows.
const messageFilterSQL = `(:org = '' OR org_id = :org) AND (:endpoint = '' OR endpoint_id = :endpoint) AND (:state = '' OR state = :state)
	AND (:since IS NULL OR received_at >= :since) AND (:until IS NULL OR received_at < :until)
	AND (:originals = 0 OR replay_of = '') AND (:provider_event_id = '' OR provider_event_id = :provider_event_id)
	AND ` + messageJudged

// A search of messages reads the messages one index finds: the bodies
// holding its words' rarest trigrams or, when its words give that index
// nothing rare to find, the events holding its match's.
const (
	messagesByBody   = `id IN (` + indexedBodies + `) AND `
	messagesByEvents = `id IN (SELECT message_id FROM events WHERE id IN (` + indexedEvents + `)) AND `
)

// messageArgs are the parameters of messageFilterSQL for sc and f, and the
// index the search reads by ("": none).
func (s *Store) messageArgs(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (drive string, args []any, err error) {
	a, err := s.searchArgs(ctx, f.Search, false)
	if err != nil {
		return "", nil, err
	}
	args = []any{sql.Named("org", sc.OrgID), sql.Named("endpoint", f.EndpointID), sql.Named("state", string(f.State)),
		sql.Named("since", ts(f.Since)), sql.Named("until", ts(f.Until)), sql.Named("originals", f.Originals),
		sql.Named("provider_event_id", f.ProviderEventID), sql.Named("type", f.Type), sql.Named("match", a.match),
		sql.Named("words", a.words), sql.Named("body_bytes", a.bodyBytes)}
	switch {
	case a.bodyFTS != "":
		return messagesByBody, append(args, sql.Named("body_fts", a.bodyFTS)), nil
	case a.eventFTS != "":
		return messagesByEvents, append(args, sql.Named("event_fts", a.eventFTS)), nil
	}
	return "", args, nil
}

// DropBodies deletes old bodies of settled messages.
func (s *Store) DropBodies(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *wtx) (err error) {
		n, err = deleteBodies(ctx, tx, now, `DELETE FROM message_bodies WHERE message_id IN (
			SELECT m.id FROM messages m JOIN orgs o ON o.id = m.org_id
			 WHERE m.received_at < ?1 - (SELECT min(v) FROM (SELECT ?2 AS v UNION ALL
			       SELECT body_retention_us FROM orgs WHERE body_retention_us IS NOT NULL))
			   AND m.received_at < ?1 - coalesce(o.body_retention_us, ?2)
			   AND m.state IN ('processed', 'ignored', 'dead')
			   AND m.id IN (SELECT message_id FROM message_bodies) LIMIT ?3)
			RETURNING blob_key`, ts(now), def.Microseconds(), limit)
		return err
	})
	return n, err
}

// EraseBodies deletes an endpoint's bodies in a time range.
func (s *Store) EraseBodies(ctx context.Context, now time.Time, sc intake.Scope, endpointID string, since, until time.Time, audit ...intake.AuditEntry) (int, error) {
	var n int
	err := s.audited(ctx, audit, func(tx *wtx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM endpoints WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR org_id = ?2)`, endpointID, sc.OrgID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("endpoint", endpointID)
		}
		if err != nil {
			return err
		}
		n, err = deleteBodies(ctx, tx, now, `DELETE FROM message_bodies WHERE message_id IN (
			SELECT id FROM messages WHERE endpoint_id = ? AND received_at >= ? AND received_at < ?)
			RETURNING blob_key`, endpointID, ts(since), ts(until))
		return err
	})
	return n, err
}

// DeleteSettled deletes old settled messages and all that hangs off them.
func (s *Store) DeleteSettled(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *wtx) error {
		// Notices are kept as long as the rows of their org, and leave in
		// batches as bounded as the messages'.
		if _, err := tx.ExecContext(ctx, `DELETE FROM notices WHERE id IN (SELECT id FROM notices
			WHERE at < ?1 - coalesce((SELECT retention_us FROM orgs o WHERE o.id = notices.org_id), ?2) LIMIT ?3)`,
			ts(now), def.Microseconds(), limit); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT m.id FROM messages m JOIN orgs o ON o.id = m.org_id
			WHERE m.received_at < ?1 - (SELECT min(v) FROM (SELECT ?2 AS v UNION ALL
			      SELECT retention_us FROM orgs WHERE retention_us IS NOT NULL))
			  AND m.received_at < ?1 - coalesce(o.retention_us, ?2)
			  AND m.state IN ('processed', 'ignored', 'dead')
			  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.message_id = m.id AND e.state IN ('pending', 'retrying'))
			LIMIT ?3`, ts(now), def.Microseconds(), limit)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := "(?" + strings.Repeat(", ?", len(ids)-1) + ")"
		for _, q := range []string{
			`DELETE FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE message_id IN ` + in + `)`,
			`DELETE FROM issue_events WHERE item_id IN (SELECT id FROM events WHERE message_id IN ` + in + `)`,
			`DELETE FROM issue_events WHERE item_id IN ` + in,
			`DELETE FROM routes WHERE event_id IN (SELECT id FROM events WHERE message_id IN ` + in + `)`,
			`DELETE FROM events WHERE message_id IN ` + in,
			`DELETE FROM message_identities WHERE message_id IN ` + in,
			`DELETE FROM message_attempts WHERE message_id IN ` + in,
			`DELETE FROM messages WHERE id IN ` + in,
		} {
			if _, err := tx.ExecContext(ctx, q, ids...); err != nil {
				return err
			}
		}
		if _, err := deleteBodies(ctx, tx, now, `DELETE FROM message_bodies WHERE message_id IN `+in+` RETURNING blob_key`, ids...); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// deleteBodies runs query, a DELETE of message_bodies RETURNING blob_key,
// and records the keys of the deleted bodies' objects as pending deletes
// at now in the same transaction (a key pending already keeps the later
// time). It returns how many bodies it deleted.
func deleteBodies(ctx context.Context, tx *wtx, now time.Time, query string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n := 0
	var keys []string
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		if key != "" {
			keys = append(keys, key)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(keys) == 0 {
		return n, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO blob_deletes (key, recorded_at) SELECT value, ? FROM json_each(?) WHERE true
		ON CONFLICT (key) DO UPDATE SET recorded_at = max(recorded_at, excluded.recorded_at)`, ts(now), jsonList(keys))
	return n, err
}

// BlobsReferenced reports which of keys a stored body names.
func (s *Store) BlobsReferenced(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT DISTINCT blob_key FROM message_bodies INDEXED BY message_bodies_blob
		WHERE blob_key <> '' AND blob_key IN (?`+strings.Repeat(", ?", len(keys)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// PendingBlobDeletes lists keys whose bodies were deleted, those recorded
// longest ago first; with before set, only those recorded before it.
func (s *Store) PendingBlobDeletes(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT key FROM blob_deletes INDEXED BY blob_deletes_recorded
		WHERE ?1 IS NULL OR recorded_at < ?1 ORDER BY recorded_at, key LIMIT ?2`, ts(before), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// ForgetBlobDeletes removes keys from the pending deletes.
func (s *Store) ForgetBlobDeletes(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	return s.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM blob_deletes WHERE key IN (?`+strings.Repeat(", ?", len(keys)-1)+`)`, args...)
		return err
	})
}

// Stats counts messages and events by state and finds the oldest due work.
func (s *Store) Stats(ctx context.Context, now time.Time) (intake.Stats, error) {
	st := intake.Stats{Messages: map[intake.MessageState]int{}, Events: map[[2]string]int{}}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT state, count(*) FROM messages GROUP BY state`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var state intake.MessageState
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.Messages[state] = n
	}
	rows.Close()
	rows, err = s.reader(ctx).QueryContext(ctx, `SELECT provider, state, count(*) FROM events GROUP BY provider, state`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var provider, state string
		var n int
		if err := rows.Scan(&provider, &state, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.Events[[2]string{provider, state}] = n
	}
	rows.Close()
	var m, e sql.NullInt64
	if err := s.reader(ctx).QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM messages INDEXED BY messages_due
		WHERE state IN (`+claimable+`) AND next_attempt_at <= ?`, ts(now)).Scan(&m); err != nil {
		return st, err
	}
	if err := s.reader(ctx).QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM events
		WHERE state IN ('pending', 'retrying') AND next_attempt_at <= ?`, ts(now)).Scan(&e); err != nil {
		return st, err
	}
	route, err := oldestDueRoute(ctx, s.read, "", now)
	if err != nil {
		return st, err
	}
	st.OldestDueMessage, st.OldestDueEvent = fromTS(m), earliest(fromTS(e), route)
	return st, nil
}

// CountMessages counts the messages f selects.
func (s *Store) CountMessages(ctx context.Context, sc intake.Scope, f intake.MessageFilter) (int, error) {
	drive, args, err := s.messageArgs(ctx, sc, f)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.reader(ctx).QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE `+drive+messageFilterSQL, args...).Scan(&n)
	return n, err
}

// claimMessagesSQL takes the earliest due of two kinds: claimable messages
// and expired leases, of orgs not in the JSON array ?4. Each branch is
// limited on its own partial index, so a backlog of due messages costs a
// claim no more than its batch (and the rows of the orgs it skips). The
// indexes are named: without statistics the planner would take the index
// on (state, received_at) and sort the whole backlog for every claim.
var claimMessagesSQL = `UPDATE messages
	SET state = 'processing', attempt = attempt + 1, lease_until = ?1
	WHERE id IN (
		SELECT id FROM (
			SELECT * FROM (SELECT id, next_attempt_at AS due FROM messages INDEXED BY messages_due
				WHERE state IN (` + claimable + `) AND next_attempt_at <= ?2 AND org_id NOT IN (SELECT value FROM json_each(?4))
				ORDER BY next_attempt_at LIMIT ?3)
			UNION ALL
			SELECT * FROM (SELECT id, lease_until AS due FROM messages INDEXED BY messages_leased
				WHERE state = 'processing' AND lease_until <= ?2 AND org_id NOT IN (SELECT value FROM json_each(?4))
				ORDER BY lease_until LIMIT ?3)
		) ORDER BY due LIMIT ?3)
	RETURNING ` + messageColumns

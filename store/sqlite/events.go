package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/intakehq/intake"
)

const eventColumns = `id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
	received_at, subject_app, subject_record_id, data, data_truncated, object_ids, state, attempt, max_attempts,
	next_attempt_at, replay, replay_of, created_at, traceparent`

// scanEvent reads eventColumns, then any extra columns into extra.
func scanEvent(row interface{ Scan(...any) error }, extra ...any) (intake.Event, error) {
	var e intake.Event
	var occurred, received, next, created sql.NullInt64
	var app, record, data, objectIDs string
	err := row.Scan(append([]any{&e.ID, &e.OrgID, &e.ConnectionID, &e.MessageID, &e.Provider, &e.Type, &e.Kind, &e.ProviderEventID,
		&occurred, &received, &app, &record, &data, &e.DataTruncated, &objectIDs, &e.State, &e.Attempt,
		&e.MaxAttempts, &next, &e.Replay, &e.ReplayOf, &created, &e.TraceParent}, extra...)...)
	if err != nil {
		return e, err
	}
	e.OccurredAt, e.ReceivedAt, e.NextAttemptAt, e.CreatedAt = fromTS(occurred), fromTS(received), fromTS(next), fromTS(created)
	if app != "" || record != "" {
		e.Subject = &intake.Subject{App: app, RecordID: record}
	}
	e.Data = json.RawMessage(data)
	return e, json.Unmarshal([]byte(objectIDs), &e.ObjectIDs)
}

// Event returns one event visible in sc.
func (s *Store) Event(ctx context.Context, sc intake.Scope, id string) (intake.Event, error) {
	e, err := scanEvent(s.read.QueryRowContext(ctx,
		`SELECT `+eventColumns+` FROM events WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFound("event", id)
	}
	return e, err
}

// ListEvents lists events newest first, a page at a time.
func (s *Store) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	limit := intake.PageLimit(f.Limit)
	rows, err := s.read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events
		WHERE (?1 = '' OR org_id = ?1) AND (?2 = '' OR state = ?2) AND (?3 = '' OR type = ?3) AND (?4 = '' OR id < ?4)
		  AND (?6 IS NULL OR created_at >= ?6) AND (?7 IS NULL OR created_at < ?7)
		  AND (?8 = '' OR id IN (SELECT event_id FROM deliveries WHERE consumer_id = ?8))
		ORDER BY id DESC LIMIT ?5`, sc.OrgID, string(f.State), f.Type, f.Cursor, limit+1, ts(f.Since), ts(f.Until), f.ConsumerID)
	if err != nil {
		return intake.Page[intake.Event]{}, err
	}
	defer rows.Close()
	var page intake.Page[intake.Event]
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, e)
	}
	page = intake.KeysetPage(page.Items, limit)
	return page, rows.Err()
}

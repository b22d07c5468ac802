package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/keyset"
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
	e, err := scanEvent(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+eventColumns+` FROM events WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFound("event", id)
	}
	return e, err
}

// ListEvents lists events newest first, a page at a time. A search whose
// words or match the index finds rare reads the events it finds
// (searchEventsSQL); any other list reads events in order, judging each.
func (s *Store) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	limit := intake.PageLimit(f.Limit)
	query, args, err := s.eventQuery(ctx, sc, f, limit+1)
	if err != nil {
		return intake.Page[intake.Event]{}, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+eventColumns+query, args...)
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
	page = keyset.Page(page.Items, limit)
	return page, rows.Err()
}

// CountEvents counts what ListEvents would list over all pages.
func (s *Store) CountEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (int, error) {
	f.Cursor = ""
	query, args, err := s.eventQuery(ctx, sc, f, -1)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.reader(ctx).QueryRowContext(ctx, `SELECT count(*)`+query, args...).Scan(&n)
	return n, err
}

// eventQuery is what follows the columns of a query listing the events f
// selects, at most limit of them (-1: all), and its arguments.
func (s *Store) eventQuery(ctx context.Context, sc intake.Scope, f intake.EventFilter, limit int) (string, []any, error) {
	a, err := s.searchArgs(ctx, f.Search, true)
	if err != nil {
		return "", nil, err
	}
	query, args := listEventsSQL, []any{sql.Named("org", sc.OrgID), sql.Named("state", string(f.State)), sql.Named("type", f.Type),
		sql.Named("cursor", f.Cursor), sql.Named("limit", limit), sql.Named("since", ts(f.Since)), sql.Named("until", ts(f.Until)),
		sql.Named("consumer", f.ConsumerID), sql.Named("match", a.match), sql.Named("words", a.words)}
	if a.eventFTS != "" {
		query, args = searchEventsSQL, append(args, sql.Named("event_fts", a.eventFTS))
	}
	return query, args, nil
}

// eventFilterSQL is what an events list selects by, its search judged on
// each row.
const eventFilterSQL = `(:org = '' OR org_id = :org) AND (:state = '' OR state = :state) AND (:type = '' OR type = :type)
	  AND (:cursor = '' OR id < :cursor) AND (:since IS NULL OR created_at >= :since) AND (:until IS NULL OR created_at < :until)
	  AND (:consumer = '' OR id IN (SELECT event_id FROM deliveries WHERE consumer_id = :consumer))
	  AND ` + eventJudged

// listEventsSQL reads events in order; searchEventsSQL reads those the
// search index finds (and those it has not reached yet).
const (
	listEventsSQL   = ` FROM events WHERE ` + eventFilterSQL + ` ORDER BY id DESC LIMIT :limit`
	searchEventsSQL = ` FROM events WHERE id IN (` + indexedEvents + `)
	  AND ` + eventFilterSQL + ` ORDER BY id DESC LIMIT :limit`
)

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

const eventColumns = `id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
	received_at, subject_app, subject_record_id, data, data_truncated, object_ids, state, attempt, max_attempts,
	next_attempt_at, replay, replay_of, created_at, traceparent`

// scanEvent reads eventColumns, then any extra columns into extra.
func scanEvent(row pgx.Row, extra ...any) (intake.Event, error) {
	var e intake.Event
	var occurred, received, next, created *time.Time
	var app, record string
	var data []byte
	var replayOf *string
	err := row.Scan(append([]any{&e.ID, &e.OrgID, &e.ConnectionID, &e.MessageID, &e.Provider, &e.Type, &e.Kind, &e.ProviderEventID,
		&occurred, &received, &app, &record, &data, &e.DataTruncated, &e.ObjectIDs, &e.State, &e.Attempt,
		&e.MaxAttempts, &next, &e.Replay, &replayOf, &created, &e.TraceParent}, extra...)...)
	if err != nil {
		return e, err
	}
	e.OccurredAt, e.ReceivedAt, e.NextAttemptAt, e.CreatedAt = fromTS(occurred), fromTS(received), fromTS(next), fromTS(created)
	e.ReplayOf = fromID(replayOf)
	if app != "" || record != "" {
		e.Subject = &intake.Subject{App: app, RecordID: record}
	}
	e.Data = json.RawMessage(data)
	if len(e.ObjectIDs) == 0 {
		e.ObjectIDs = nil
	}
	return e, nil
}

// Event returns one event visible in sc.
func (s *Store) Event(ctx context.Context, sc intake.Scope, eventID string) (intake.Event, error) {
	var e intake.Event
	if !validIDs(eventID) {
		return e, notFound("event", eventID)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+eventColumns+` FROM events WHERE id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, eventID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { e, err = scanEvent(row); return err })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return e, notFound("event", eventID)
	}
	return e, err
}

// ListEvents lists events newest first, a page at a time; a search in an
// org's scope reads through searchScoped.
func (s *Store) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	var page intake.Page[intake.Event]
	if f.Cursor != "" && !validIDs(f.Cursor) {
		return page, intake.Errorf(intake.EINVALID, "malformed cursor")
	}
	limit := intake.PageLimit(f.Limit)
	a := newSearchArgs(f.Search, false)
	args := []any{nullID(sc.OrgID), string(f.State), text(f.Type), nullID(f.Cursor), limit + 1, ts(f.Since), ts(f.Until),
		nullID(f.ConsumerID), a.match, a.lead, a.patterns}
	scan := func(row pgx.Row) (intake.Event, error) { return scanEvent(row) }
	var err error
	where, args := eventWhere(f.Search, args)
	if f.Search.IsZero() || sc.Staff() {
		err = s.readPlanned(ctx, sc, func(b *pgx.Batch) {
			queueRows(b, &page.Items, scan, `SELECT `+eventColumns+` FROM events WHERE `+where+` ORDER BY id DESC LIMIT $5`, args...)
		})
	} else {
		page.Items, err = searchScoped(ctx, s, sc, `SELECT id FROM events WHERE `+where+` ORDER BY id DESC LIMIT $5`, args,
			`SELECT `+eventColumns+` FROM events WHERE id = ANY($1) ORDER BY id DESC`, scan)
	}
	page = intake.KeysetPage(page.Items, limit)
	return page, err
}

// CountEvents counts what ListEvents would list over all pages. A search's
// count in an org's scope is made as the owner, the org named in the
// query, for the reason searchScoped gives; it shows a number, never a row.
func (s *Store) CountEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (int, error) {
	a := newSearchArgs(f.Search, false)
	// $5, a list's limit, is NULL: no limit.
	args := []any{nullID(sc.OrgID), string(f.State), text(f.Type), nil, nil, ts(f.Since), ts(f.Until),
		nullID(f.ConsumerID), a.match, a.lead, a.patterns}
	counted := sc
	if !f.Search.IsZero() {
		counted = intake.Scope{}
	}
	where, args := eventWhere(f.Search, args)
	var n int
	err := s.readPlanned(ctx, counted, func(b *pgx.Batch) {
		b.Queue(`SELECT count(*) FROM (SELECT 1 FROM events WHERE `+where+` LIMIT $5) AS selected`, args...).
			QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	})
	return n, err
}

// eventWhere is what an events list selects by, and the arguments it
// takes of args, $1 to $11 of ListEvents ($5, the limit, is the caller's).
// A search judges an event's data in its event_search row (migration 35),
// whose indexes serve it; the condition is written only for a search, and
// at the top level, so that the planner may join through those indexes.
func eventWhere(search intake.Search, args []any) (string, []any) {
	if search.IsZero() {
		return eventFilter, args[:8]
	}
	return eventFilter + eventSearched, args
}

// eventFilter selects events by their own columns, $1 to $8.
const eventFilter = `($1::uuid IS NULL OR org_id = $1) AND ($2 = '' OR state = $2) AND ($3 = '' OR type = $3)
	AND ($4::uuid IS NULL OR id < $4)
	AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)
	AND ($8::uuid IS NULL OR id IN (SELECT event_id FROM deliveries WHERE consumer_id = $8))`

// eventSearched selects events by their data, $9 to $11.
const eventSearched = `
	AND id IN (SELECT s.event_id FROM event_search s WHERE ($1::uuid IS NULL OR s.org_id = $1)
		AND ($9::jsonb IS NULL OR intake_jsonb(s.data) @> $9)
		AND ($10 = '' OR s.data::text ILIKE $10) AND (cardinality($11::text[]) = 0 OR s.data::text ILIKE ALL ($11)))`

// searchScoped runs a search in an org's scope in two reads. Row-level
// security keeps every operator that is not leakproof (ILIKE, jsonb's @>)
// from being judged before its policy, so under it a search could use no
// index of its own and would read all of the org's rows. So the ids are
// found as the owner, by the search's indexes, the org named in the query
// (idsArgs' $1); and the rows are then read by those ids in the org's
// scope, under row-level security as every org's read is, so no query bug
// shows a row of another org.
func searchScoped[T any](ctx context.Context, s *Store, sc intake.Scope, ids string, idsArgs []any, rows string,
	scan func(pgx.Row) (T, error)) ([]T, error) {
	var found []string
	err := s.readPlanned(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &found, func(row pgx.Row) (id string, err error) { return id, row.Scan(&id) }, ids, idsArgs...)
	})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	var out []T
	err = s.read(ctx, sc, func(b *pgx.Batch) { queueRows(b, &out, scan, rows, found) })
	return out, err
}

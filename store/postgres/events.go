package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/keyset"
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

// ListEvents lists events newest first, a page at a time. A search finds
// its page's ids in event_search (searchedEvents) and reads those events;
// in an org's scope through searchScoped.
func (s *Store) ListEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (intake.Page[intake.Event], error) {
	var page intake.Page[intake.Event]
	if f.Cursor != "" && !validIDs(f.Cursor) {
		return page, intake.Errorf(intake.EINVALID, "malformed cursor")
	}
	limit := intake.PageLimit(f.Limit)
	args := eventArgs(sc, f, limit+1)
	scan := func(row pgx.Row) (intake.Event, error) { return scanEvent(row) }
	var err error
	switch {
	case f.Search.IsZero():
		err = s.readPlanned(ctx, sc, func(b *pgx.Batch) {
			queueRows(b, &page.Items, scan, `SELECT `+eventColumns+` FROM events WHERE `+eventFilter+` ORDER BY id DESC LIMIT $5`,
				args[:8]...)
		})
	case sc.Staff():
		err = s.readPlanned(ctx, sc, func(b *pgx.Batch) {
			queueRows(b, &page.Items, scan, `SELECT `+eventColumns+` FROM events WHERE id IN (`+searchedEvents+`) ORDER BY id DESC`,
				args...)
		})
	default:
		page.Items, err = searchScoped(ctx, s, sc, searchedEvents, args,
			`SELECT `+eventColumns+` FROM events WHERE id = ANY(`+foundIDs+`) ORDER BY id DESC`, scan)
	}
	page = keyset.Page(page.Items, limit)
	return page, err
}

// CountEvents counts what ListEvents would list over all pages. A search's
// count in an org's scope is made as the owner, the org named in the
// query, for the reason searchScoped gives; it shows a number, never a row.
func (s *Store) CountEvents(ctx context.Context, sc intake.Scope, f intake.EventFilter) (int, error) {
	// $4 and $5, a list's cursor and limit, are NULL: every page, no limit.
	f.Cursor = ""
	args := eventArgs(sc, f, nil)
	counted, selected := sc, `SELECT 1 FROM events WHERE `+eventFilter+` LIMIT $5`
	if !f.Search.IsZero() {
		counted, selected = intake.Scope{}, `SELECT 1 FROM event_search s WHERE `+eventSearched+` LIMIT $5`
	} else {
		args = args[:8]
	}
	var n int
	err := s.readPlanned(ctx, counted, func(b *pgx.Batch) {
		b.Queue(`SELECT count(*) FROM (`+selected+`) AS selected`, args...).
			QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	})
	return n, err
}

// eventArgs are the parameters of an events list, $1 to $11: eventFilter
// takes $1 to $8, eventSearched all of them; $5 is the limit, nil for none.
func eventArgs(sc intake.Scope, f intake.EventFilter, limit any) []any {
	a := newSearchArgs(f.Search, false)
	return []any{nullID(sc.OrgID), string(f.State), text(f.Type), nullID(f.Cursor), limit, ts(f.Since), ts(f.Until),
		nullID(f.ConsumerID), a.match, a.lead, a.patterns}
}

// eventFilter selects events by their own columns, $1 to $8.
const eventFilter = `($1::uuid IS NULL OR org_id = $1) AND ($2 = '' OR state = $2) AND ($3 = '' OR type = $3)
	AND ($4::uuid IS NULL OR id < $4)
	AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)
	AND ($8::uuid IS NULL OR id IN (SELECT event_id FROM deliveries WHERE consumer_id = $8))`

// eventSearched selects the search rows (migrations 35, 36) of the events
// eventFilter would select whose data the search finds, $1 to $11. A row
// holds its event's org, id, creation and type, so the data's indexes and
// event_search_org serve a search and its order on one table; only a
// state, which changes, is its event's.
const eventSearched = `($1::uuid IS NULL OR s.org_id = $1) AND ($3 = '' OR s.type = $3)
	AND ($4::uuid IS NULL OR s.event_id < $4)
	AND ($6::timestamptz IS NULL OR s.created_at >= $6) AND ($7::timestamptz IS NULL OR s.created_at < $7)
	AND ($2 = '' OR EXISTS (SELECT 1 FROM events e WHERE e.id = s.event_id AND e.state = $2))
	AND ($8::uuid IS NULL OR s.event_id IN (SELECT event_id FROM deliveries WHERE consumer_id = $8))
	AND ($9::jsonb IS NULL OR intake_jsonb(s.data) @> $9)
	AND ($10 = '' OR s.data::text ILIKE $10) AND (cardinality($11::text[]) = 0 OR s.data::text ILIKE ALL ($11))`

// searchedEvents are the ids of a search's page of events, newest first,
// $1 to $11.
const searchedEvents = `SELECT s.event_id FROM event_search s WHERE ` + eventSearched + ` ORDER BY s.event_id DESC LIMIT $5`

// searchScoped runs a search in an org's scope in one transaction, one
// round trip, of two reads. Row-level security keeps every operator that is
// not leakproof (ILIKE, jsonb's @>) from being judged before its policy, so
// under it a search could use no index of its own and would read all of the
// org's rows. So the ids are found as the owner, by the search's indexes,
// the org named in the query (idsArgs' $1), and kept for the transaction;
// the rows are then read by those ids (rows reads them as foundIDs) in the
// org's scope, under row-level security as every org's read is, so no query
// bug shows a row of another org.
func searchScoped[T any](ctx context.Context, s *Store, sc intake.Scope, ids string, idsArgs []any, rows string,
	scan func(pgx.Row) (T, error)) ([]T, error) {
	var out []T
	err := s.readPlanned(ctx, intake.Scope{}, func(b *pgx.Batch) {
		b.Queue(`SELECT set_config('intake.found', coalesce(array_agg(id)::text, '{}'), true) FROM (`+ids+`) AS found (id)`, idsArgs...)
		b.Queue(scopeSQL, sc.OrgID)
		queueRows(b, &out, scan, rows)
	})
	return out, err
}

// foundIDs are, in searchScoped's second read, the ids its first found.
const foundIDs = `current_setting('intake.found')::uuid[]`

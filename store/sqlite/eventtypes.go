package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/intakehq/intake"
)

// EventTypeStates reads the schema state of the catalogued keys.
func (s *Store) EventTypeStates(ctx context.Context, keys []intake.EventTypeKey) (map[intake.EventTypeKey]intake.EventType, error) {
	out := make(map[intake.EventTypeKey]intake.EventType, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.ConnectionID, k.Type}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT org_id, connection_id, type, coalesce(schema, ''), version FROM event_types
		WHERE (connection_id, type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e intake.EventType
		var schema string
		if err := rows.Scan(&e.OrgID, &e.ConnectionID, &e.Type, &schema, &e.Version); err != nil {
			return nil, err
		}
		if schema != "" {
			e.Schema = json.RawMessage(schema)
		}
		out[intake.EventTypeKey{ConnectionID: e.ConnectionID, Type: e.Type}] = e
	}
	return out, rows.Err()
}

// EventTypeCounts reads how many types each connection has catalogued.
func (s *Store) EventTypeCounts(ctx context.Context, connectionIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(connectionIDs))
	if len(connectionIDs) == 0 {
		return out, nil
	}
	list, err := json.Marshal(connectionIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT connection_id, count(*) FROM event_types
		WHERE connection_id IN (SELECT value FROM json_each(?)) GROUP BY connection_id`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var conn string
		var n int
		if err := rows.Scan(&conn, &n); err != nil {
			return nil, err
		}
		out[conn] = n
	}
	return out, rows.Err()
}

// RecordEventTypes adds the updates' counts and writes each learnt schema
// over the version its learner read.
func (s *Store) RecordEventTypes(ctx context.Context, ups []intake.EventTypeUpdate) ([]intake.EventTypeKey, error) {
	var stale []intake.EventTypeKey
	err := s.tx(ctx, func(tx *wtx) error {
		stale = stale[:0]
		for _, u := range ups {
			if u.Count > 0 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO event_types (org_id, connection_id, type, first_seen_at, last_seen_at, total)
					VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (connection_id, type) DO UPDATE SET
					first_seen_at = min(first_seen_at, excluded.first_seen_at), last_seen_at = max(last_seen_at, excluded.last_seen_at),
					total = total + excluded.total`,
					u.OrgID, u.ConnectionID, u.Type, ts(u.First), ts(u.Last), u.Count); err != nil {
					return err
				}
				for hour, n := range u.Hours {
					if _, err := tx.ExecContext(ctx, `INSERT INTO event_type_hours (org_id, connection_id, type, hour, count)
						VALUES (?, ?, ?, ?, ?) ON CONFLICT (connection_id, type, hour) DO UPDATE SET count = count + excluded.count`,
						u.OrgID, u.ConnectionID, u.Type, ts(hour), n); err != nil {
						return err
					}
				}
			}
			if !u.Learnt {
				continue
			}
			res, err := tx.ExecContext(ctx, `UPDATE event_types SET schema = ?, example = ?, example_event_id = ?, version = version + 1
				WHERE connection_id = ? AND type = ? AND version = ?`,
				string(u.Schema), string(u.Example), u.ExampleEventID, u.ConnectionID, u.Type, u.Version)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				stale = append(stale, u.EventTypeKey)
				continue
			}
			for _, c := range u.Changes {
				from, _ := json.Marshal(nonNil(c.From))
				to, _ := json.Marshal(nonNil(c.To))
				if _, err := tx.ExecContext(ctx, `INSERT INTO event_type_changes (id, org_id, connection_id, type, at, path, change,
					from_types, to_types, example_event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					c.ID, u.OrgID, u.ConnectionID, u.Type, ts(c.At), c.Path, c.Change, string(from), string(to), c.ExampleEventID); err != nil {
					return err
				}
			}
			for _, n := range u.Notices {
				if err := insertNotice(ctx, tx, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return stale, classify(err)
}

// orNil reads an empty list of types as none.
func orNil(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// eventTypeColumns reads an event type with its connection's name and its
// count since ?3.
const eventTypeColumns = `t.org_id, t.connection_id, c.name, t.type, t.first_seen_at, t.last_seen_at, t.total,
	coalesce((SELECT sum(h.count) FROM event_type_hours h WHERE h.connection_id = t.connection_id AND h.type = t.type AND h.hour >= ?3), 0)`

func scanEventType(row interface{ Scan(...any) error }, more ...any) (intake.EventType, error) {
	var e intake.EventType
	var first, last sql.NullInt64
	err := row.Scan(append([]any{&e.OrgID, &e.ConnectionID, &e.ConnectionName, &e.Type, &first, &last, &e.Total, &e.Count24h}, more...)...)
	e.FirstSeenAt, e.LastSeenAt = fromTS(first), fromTS(last)
	return e, err
}

// since24h is where an event type's count_24h starts: the hour now is in
// and the 23 before it.
func since24h(now time.Time) time.Time { return now.UTC().Truncate(time.Hour).Add(-23 * time.Hour) }

// ListEventTypes lists the catalogued types of live connections visible in
// sc.
func (s *Store) ListEventTypes(ctx context.Context, sc intake.Scope, f intake.EventTypeFilter) ([]intake.EventType, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+eventTypeColumns+`
		FROM event_types t JOIN connections c ON c.id = t.connection_id AND c.deleted_at IS NULL
		WHERE (?1 = '' OR t.org_id = ?1) AND (?2 = '' OR t.connection_id = ?2)
		ORDER BY c.name, t.connection_id, t.type`, sc.OrgID, f.ConnectionID, ts(since24h(f.Now)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []intake.EventType{}
	for rows.Next() {
		e, err := scanEventType(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// EventType reads one catalogued type with its days and latest changes.
func (s *Store) EventType(ctx context.Context, sc intake.Scope, key intake.EventTypeKey, now time.Time) (intake.EventTypeDetail, error) {
	var d intake.EventTypeDetail
	var schema, example sql.NullString
	var exampleID string
	var version int64
	// One read transaction, so the counts and the changes are of one
	// moment: a flush writes both at once.
	tx, err := s.reader(ctx).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return d, classify(err)
	}
	defer tx.Rollback()
	e, err := scanEventType(tx.QueryRowContext(ctx, `SELECT `+eventTypeColumns+`, t.schema, t.example, t.example_event_id, t.version
		FROM event_types t JOIN connections c ON c.id = t.connection_id AND c.deleted_at IS NULL
		WHERE (?1 = '' OR t.org_id = ?1) AND t.connection_id = ?2 AND t.type = ?4`, sc.OrgID, key.ConnectionID, ts(since24h(now)), key.Type),
		&schema, &example, &exampleID, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return d, intake.Errorf(intake.ENOTFOUND, "event type %s of connection %s not found", key.Type, key.ConnectionID)
	}
	if err != nil {
		return d, err
	}
	d.EventType = e
	d.ExampleEventID, d.Version = exampleID, version
	if schema.String != "" {
		d.Schema = json.RawMessage(schema.String)
	}
	if example.String != "" {
		d.Example = json.RawMessage(example.String)
	}
	days, err := tx.QueryContext(ctx, `SELECT hour / 86400000000 AS day, sum(count) FROM event_type_hours
		WHERE connection_id = ? AND type = ? AND hour >= ? GROUP BY day ORDER BY day`,
		key.ConnectionID, key.Type, ts(now.Add(-intake.EventTypeHistory)))
	if err != nil {
		return d, err
	}
	defer days.Close()
	for days.Next() {
		var day, n int64
		if err := days.Scan(&day, &n); err != nil {
			return d, err
		}
		d.Days = append(d.Days, intake.EventTypeDay{Day: time.Unix(day*86400, 0).UTC(), Count: n})
	}
	if err := days.Err(); err != nil {
		return d, err
	}
	changes, err := tx.QueryContext(ctx, `SELECT id, at, path, change, from_types, to_types, example_event_id FROM event_type_changes
		WHERE connection_id = ? AND type = ? ORDER BY at DESC, id DESC LIMIT ?`, key.ConnectionID, key.Type, intake.MaxEventTypeChanges)
	if err != nil {
		return d, err
	}
	defer changes.Close()
	for changes.Next() {
		c := intake.EventTypeChange{OrgID: d.OrgID, ConnectionID: d.ConnectionID, Type: d.Type}
		var at sql.NullInt64
		var from, to string
		if err := changes.Scan(&c.ID, &at, &c.Path, &c.Change, &from, &to, &c.ExampleEventID); err != nil {
			return d, err
		}
		c.At = fromTS(at)
		if err := errors.Join(json.Unmarshal([]byte(from), &c.From), json.Unmarshal([]byte(to), &c.To)); err != nil {
			return d, err
		}
		c.From, c.To = orNil(c.From), orNil(c.To)
		d.Changes = append(d.Changes, c)
	}
	return d, changes.Err()
}

// PruneEventTypeHours deletes the counts of hours before before.
func (s *Store) PruneEventTypeHours(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM event_type_hours WHERE hour < ?`, ts(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), classify(err)
}

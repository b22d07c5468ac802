package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// EventTypeStates reads the schema state of the catalogued keys.
func (s *Store) EventTypeStates(ctx context.Context, keys []intake.EventTypeKey) (map[intake.EventTypeKey]intake.EventType, error) {
	out := make(map[intake.EventTypeKey]intake.EventType, len(keys))
	var conns, types []string
	for _, k := range keys {
		if validIDs(k.ConnectionID) {
			conns, types = append(conns, k.ConnectionID), append(types, text(k.Type))
		}
	}
	if len(conns) == 0 {
		return out, nil
	}
	var rows []intake.EventType
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &rows, func(row pgx.Row) (intake.EventType, error) {
			var e intake.EventType
			var schema []byte
			err := row.Scan(&e.OrgID, &e.ConnectionID, &e.Type, &schema, &e.Version)
			e.Schema = schema
			return e, err
		}, `SELECT t.org_id, t.connection_id, t.type, t.schema, t.version FROM event_types t
			JOIN unnest($1::uuid[], $2::text[]) AS k (connection_id, type) ON k.connection_id = t.connection_id AND k.type = t.type`,
			conns, types)
	})
	for _, e := range rows {
		out[intake.EventTypeKey{ConnectionID: e.ConnectionID, Type: e.Type}] = e
	}
	return out, err
}

// EventTypeCounts reads how many types each connection has catalogued.
func (s *Store) EventTypeCounts(ctx context.Context, connectionIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(connectionIDs))
	conns := slices.DeleteFunc(slices.Clone(connectionIDs), func(id string) bool { return !validIDs(id) })
	if len(conns) == 0 {
		return out, nil
	}
	type count struct {
		conn string
		n    int
	}
	var rows []count
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &rows, func(row pgx.Row) (count, error) {
			var c count
			err := row.Scan(&c.conn, &c.n)
			return c, err
		}, `SELECT connection_id, count(*) FROM event_types WHERE connection_id = ANY($1::uuid[]) GROUP BY connection_id`, conns)
	})
	for _, c := range rows {
		out[c.conn] = c.n
	}
	return out, err
}

// RecordEventTypes adds the updates' counts and writes each learnt schema
// over the version its learner read. Rows are written in key order, so two
// processes recording the same types wait for each other rather than
// deadlock.
func (s *Store) RecordEventTypes(ctx context.Context, ups []intake.EventTypeUpdate) ([]intake.EventTypeKey, error) {
	ups = slices.Clone(ups)
	slices.SortFunc(ups, func(a, b intake.EventTypeUpdate) int {
		return strings.Compare(a.ConnectionID+"\x00"+a.Type, b.ConnectionID+"\x00"+b.Type)
	})
	var stale []intake.EventTypeKey
	err := s.tx(ctx, func(tx pgx.Tx) error {
		stale = stale[:0]
		for _, u := range ups {
			if !validIDs(u.OrgID, u.ConnectionID) {
				return intake.Errorf(intake.EINVALID, "event type %s: org and connection must be ids", u.Type)
			}
			if u.Count > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO event_types (org_id, connection_id, type, first_seen_at, last_seen_at, total)
					VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (connection_id, type) DO UPDATE SET
					first_seen_at = least(event_types.first_seen_at, excluded.first_seen_at),
					last_seen_at = greatest(event_types.last_seen_at, excluded.last_seen_at),
					total = event_types.total + excluded.total`,
					u.OrgID, u.ConnectionID, text(u.Type), ts(u.First), ts(u.Last), u.Count); err != nil {
					return err
				}
				hours := slices.SortedFunc(maps.Keys(u.Hours), time.Time.Compare)
				counts := make([]int64, len(hours))
				stamps := make([]time.Time, len(hours))
				for i, h := range hours {
					counts[i], stamps[i] = u.Hours[h], h.UTC()
				}
				if _, err := tx.Exec(ctx, `INSERT INTO event_type_hours (org_id, connection_id, type, hour, count)
					SELECT $1, $2, $3, h.hour, h.count FROM unnest($4::timestamptz[], $5::bigint[]) AS h (hour, count)
					ON CONFLICT (connection_id, type, hour) DO UPDATE SET count = event_type_hours.count + excluded.count`,
					u.OrgID, u.ConnectionID, text(u.Type), stamps, counts); err != nil {
					return err
				}
			}
			if !u.Learnt {
				continue
			}
			tag, err := tx.Exec(ctx, `UPDATE event_types SET schema = $3, example = $4, example_event_id = $5, version = version + 1
				WHERE connection_id = $1 AND type = $2 AND version = $6`,
				u.ConnectionID, text(u.Type), string(validUTF8(u.Schema)), string(validUTF8(u.Example)), nullID(u.ExampleEventID), u.Version)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				stale = append(stale, u.EventTypeKey)
				continue
			}
			for _, c := range u.Changes {
				if _, err := tx.Exec(ctx, `INSERT INTO event_type_changes (id, org_id, connection_id, type, at, path, change,
					from_types, to_types, example_event_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
					c.ID, u.OrgID, u.ConnectionID, text(u.Type), ts(c.At), text(c.Path), c.Change,
					texts(c.From), texts(c.To), c.ExampleEventID); err != nil {
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
	return stale, err
}

// eventTypeColumns reads an event type with its connection's name and its
// count since $3.
const eventTypeColumns = `t.org_id, t.connection_id, c.name, t.type, t.first_seen_at, t.last_seen_at, t.total,
	coalesce((SELECT sum(h.count) FROM event_type_hours h WHERE h.connection_id = t.connection_id AND h.type = t.type AND h.hour >= $3), 0)`

func scanEventType(row pgx.Row, more ...any) (intake.EventType, error) {
	var e intake.EventType
	var first, last *time.Time
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
	out := []intake.EventType{}
	if f.ConnectionID != "" && !validIDs(f.ConnectionID) {
		return out, nil
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, func(row pgx.Row) (intake.EventType, error) { return scanEventType(row) }, `SELECT `+eventTypeColumns+`
			FROM event_types t JOIN connections c ON c.id = t.connection_id AND c.deleted_at IS NULL
			WHERE ($1::uuid IS NULL OR t.org_id = $1) AND ($2::uuid IS NULL OR t.connection_id = $2)
			ORDER BY c.name, t.connection_id, t.type`, nullID(sc.OrgID), nullID(f.ConnectionID), ts(since24h(f.Now)))
	})
	if out == nil {
		out = []intake.EventType{}
	}
	return out, err
}

// EventType reads one catalogued type with its days and latest changes.
func (s *Store) EventType(ctx context.Context, sc intake.Scope, key intake.EventTypeKey, now time.Time) (intake.EventTypeDetail, error) {
	var d intake.EventTypeDetail
	missing := intake.Errorf(intake.ENOTFOUND, "event type %s of connection %s not found", key.Type, key.ConnectionID)
	if !validIDs(key.ConnectionID) {
		return d, missing
	}
	var schema, example []byte
	var exampleID *string
	var version int64
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+eventTypeColumns+`, t.schema, t.example, t.example_event_id, t.version
			FROM event_types t JOIN connections c ON c.id = t.connection_id AND c.deleted_at IS NULL
			WHERE ($1::uuid IS NULL OR t.org_id = $1) AND t.connection_id = $2 AND t.type = $4`,
			nullID(sc.OrgID), key.ConnectionID, ts(since24h(now)), text(key.Type)).QueryRow(func(row pgx.Row) error {
			e, err := scanEventType(row, &schema, &example, &exampleID, &version)
			d.EventType = e
			return err
		})
		queueRows(b, &d.Days, func(row pgx.Row) (intake.EventTypeDay, error) {
			var day intake.EventTypeDay
			err := row.Scan(&day.Day, &day.Count)
			day.Day = day.Day.UTC()
			return day, err
		}, `SELECT date_trunc('day', h.hour, 'UTC'), sum(h.count)::bigint FROM event_type_hours h
			WHERE h.connection_id = $1 AND h.type = $2 AND h.hour >= $3 AND ($4::uuid IS NULL OR h.org_id = $4)
			GROUP BY 1 ORDER BY 1`, key.ConnectionID, text(key.Type), ts(now.Add(-intake.EventTypeHistory)), nullID(sc.OrgID))
		queueRows(b, &d.Changes, func(row pgx.Row) (intake.EventTypeChange, error) {
			c := intake.EventTypeChange{ConnectionID: key.ConnectionID, Type: key.Type}
			var at *time.Time
			err := row.Scan(&c.ID, &c.OrgID, &at, &c.Path, &c.Change, &c.From, &c.To, &c.ExampleEventID)
			c.At = fromTS(at)
			c.From, c.To = orNil(c.From), orNil(c.To)
			return c, err
		}, `SELECT id, org_id, at, path, change, from_types, to_types, example_event_id FROM event_type_changes
			WHERE connection_id = $1 AND type = $2 AND ($3::uuid IS NULL OR org_id = $3) ORDER BY at DESC, id DESC LIMIT $4`,
			key.ConnectionID, text(key.Type), nullID(sc.OrgID), intake.MaxEventTypeChanges)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return intake.EventTypeDetail{}, missing
	}
	if err != nil {
		return intake.EventTypeDetail{}, err
	}
	d.Schema, d.Example, d.ExampleEventID, d.Version = jsonOrNil(schema), jsonOrNil(example), fromID(exampleID), version
	return d, nil
}

func jsonOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// orNil reads an empty list of types as none.
func orNil(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

// PruneEventTypeHours deletes the counts of hours before before.
func (s *Store) PruneEventTypeHours(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM event_type_hours WHERE hour < $1`, ts(before))
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

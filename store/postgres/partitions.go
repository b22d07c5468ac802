package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/intakehq/intake"
)

// Messages and all that hangs off them are kept in partitions of one UTC
// day, ranged on the time a UUIDv7 carries (migration 00025). Retention
// removes a day by detaching its partitions and dropping them whole, so its
// cost does not grow with the rows a day holds; only the rows still in
// flight are copied out first, into the default partition, where they are
// deleted row by row once they settle and expire. The default partition
// also takes any row no day covers (days are made aheadDays ahead), and the
// legacy partition holds what was stored before the upgrade.

// dayTable is a table kept in day partitions, ranged on key.
type dayTable struct {
	name, key string
	// bodies: its days end after the body retention, not the rows'.
	bodies bool
	// keep reads the keys of the rows of a day being dropped that stay:
	// those still in flight. {p} stands for the day's partition, $1 and $2
	// (where it uses them) for its bounds. It reads partial indexes only (the few rows in
	// flight), never a whole day, since it runs under the table's lock.
	keep string
	// statistics, when set, is a column list each partition keeps
	// multivariate statistics of, named <partition>_<columns joined by _>
	// (Stats reads them; autovacuum builds them per partition only).
	statistics []string
}

// unsettledIn reads the ids of a day's messages not yet settled.
const unsettledIn = `SELECT id FROM messages WHERE state IN ('queued', 'processing', 'failed') AND id >= $1 AND id < $2`

var dayTables = []dayTable{
	{name: "messages", key: "id",
		keep: `SELECT id FROM {p} WHERE state IN ('queued', 'processing', 'failed')
		       UNION SELECT message_id FROM events WHERE state IN ('pending', 'retrying') AND message_id >= $1 AND message_id < $2`},
	{name: "message_attempts", key: "message_id", keep: unsettledIn},
	{name: "message_bodies", key: "message_id", bodies: true, keep: unsettledIn},
	{name: "events", key: "id",
		keep: `SELECT id FROM {p} WHERE state IN ('pending', 'retrying')
		       UNION SELECT event_id FROM routes WHERE state = 'waiting' AND event_id >= $1 AND event_id < $2`,
		statistics: []string{"provider", "state"}},
	{name: "routes", key: "event_id", keep: `SELECT event_id FROM {p} WHERE state = 'waiting'`},
	{name: "deliveries", key: "event_id", keep: `SELECT event_id FROM routes WHERE state = 'waiting' AND event_id >= $1 AND event_id < $2`},
}

// aheadDays is how many days after today have their partitions made.
const aheadDays = 3

// dropLockTimeout bounds how long a detach waits for its table's lock (or
// a new day for its default partition's), during which the statements
// queued behind it wait too. What cannot have its lock in time is tried
// again at the next sweep.
const dropLockTimeout = "250ms"

// partitionLock is the advisory lock partitions are made and dropped under,
// so two processes never make the same day.
const partitionLock int64 = 0x696e74616b6570 // "intakep"

// dayID returns the first UUIDv7 of t's UTC day: the bound between days.
func dayID(t time.Time) string {
	ms := t.UTC().Truncate(24 * time.Hour).UnixMilli()
	h := fmt.Sprintf("%012x", ms)
	return h[:8] + "-" + h[8:] + "-0000-0000-000000000000"
}

// partition is one partition of a day table, as the catalog has it.
type partition struct {
	name string
	// lo and hi bound its ids: lo "" is MINVALUE. A default partition has
	// neither.
	lo, hi  string
	dflt    bool
	dayName bool // named as a day partition: table_pYYYYMMDD
}

// wide reports whether the partition is not one day: the default or the
// legacy one. Its expired rows are deleted row by row.
func (p partition) wide() bool { return p.dflt || p.lo == "" }

var boundRE = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'([0-9a-f-]{36})')\) TO \('([0-9a-f-]{36})'\)$`)

// partitions lists table's partitions, ordered by their lower bound with
// the default last.
func partitions(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, table string) ([]partition, error) {
	rows, err := q.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
		  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE i.inhparent = $1::regclass`, table)
	if err != nil {
		return nil, err
	}
	var out, dflt []partition
	for rows.Next() {
		var name, bound string
		if err := rows.Scan(&name, &bound); err != nil {
			rows.Close()
			return nil, err
		}
		p := partition{name: name, dayName: strings.HasPrefix(name, table+"_p")}
		if bound == "DEFAULT" {
			p.dflt = true
			dflt = append(dflt, p)
			continue
		}
		m := boundRE.FindStringSubmatch(bound)
		if m == nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: partition %s of %s has bounds %s, not a range of ids", name, table, bound)
		}
		p.lo, p.hi = m[2], m[3]
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Fixed-width lower-case hex compares as the ids do.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].lo < out[j-1].lo; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return append(out, dflt...), nil
}

// ensureDays makes the partitions of now's day and the aheadDays after it
// that no partition covers yet, returning how many it had to leave for
// later because the default partition's lock was busy. Rows of such a day
// already in the default partition move into the new one, under a lock on
// the default partition only, so writes to other days go on.
func (s *Store) ensureDays(ctx context.Context, now time.Time) (postponed int, err error) {
	for _, t := range dayTables {
		for d := 0; d <= aheadDays; d++ {
			day := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, d)
			err := s.ensureDay(ctx, t, day)
			if lockBusy(err) {
				// Whatever holds the lock likely holds it for the next
				// days too: each try would hold up the statements queued
				// behind it once more.
				s.log.Info("postgres: a coming day waits for its default partition's lock; the next sweep tries again",
					"table", t.name, "day", day.Format(time.DateOnly))
				postponed++
				break
			}
			if err != nil {
				return postponed, fmt.Errorf("postgres: partition of %s for %s: %w", t.name, day.Format(time.DateOnly), err)
			}
		}
	}
	return postponed, nil
}

// lockBusy reports whether err is a lock timeout (lock_not_available).
func lockBusy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

func (s *Store) ensureDay(ctx context.Context, t dayTable, day time.Time) error {
	lo, hi := dayID(day), dayID(day.AddDate(0, 0, 1))
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, partitionLock); err != nil {
			return err
		}
		parts, err := partitions(ctx, tx, t.name)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if !p.dflt && p.lo < hi && lo < p.hi {
				return nil // covered
			}
		}
		name := pgx.Identifier{t.name + "_p" + day.Format("20060102")}.Sanitize()
		parent, dflt := pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{t.name + "_default"}.Sanitize()
		key := pgx.Identifier{t.key}.Sanitize()
		for _, q := range []string{
			`SET LOCAL lock_timeout = '` + dropLockTimeout + `'`,
			`LOCK TABLE ` + dflt + ` IN ACCESS EXCLUSIVE MODE`,
			`CREATE TABLE ` + name + ` (LIKE ` + parent + ` INCLUDING DEFAULTS)`,
			`WITH moved AS (DELETE FROM ` + dflt + ` WHERE ` + key + ` >= '` + lo + `' AND ` + key + ` < '` + hi + `' RETURNING *)
			 INSERT INTO ` + name + ` SELECT * FROM moved`,
			`ALTER TABLE ` + parent + ` ATTACH PARTITION ` + name + ` FOR VALUES FROM ('` + lo + `') TO ('` + hi + `')`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		if len(t.statistics) > 0 {
			stats := pgx.Identifier{t.name + "_p" + day.Format("20060102") + "_" + strings.Join(t.statistics, "_")}.Sanitize()
			if _, err := tx.Exec(ctx, `CREATE STATISTICS `+stats+` (mcv) ON `+strings.Join(t.statistics, ", ")+` FROM `+name); err != nil {
				return err
			}
		}
		return nil
	})
}

// RollDays makes the partitions of the coming days, and drops every
// partition whose whole range is past its retention: the body retention
// for bodies, the row retention for the rest. An org may keep less than
// the server, never more (intake.Org), so a day past the server's
// retention is past every org's. The rows of a dropped day still in
// flight are kept; the objects of its bodies become pending deletes.
func (s *Store) RollDays(ctx context.Context, now time.Time, bodyRetention, retention time.Duration) (intake.DaysRolled, error) {
	var r intake.DaysRolled
	if err := s.dropDetached(ctx); err != nil {
		return r, err
	}
	postponed, err := s.ensureDays(ctx, now)
	r.Postponed += postponed
	if err != nil {
		return r, err
	}
	for _, t := range dayTables {
		ret := retention
		if t.bodies {
			ret = bodyRetention
		}
		parts, err := partitions(ctx, s.pool, t.name)
		if err != nil {
			return r, classify(err)
		}
		cutoff := dayID(now.Add(-ret))
		for _, p := range parts {
			if p.dflt || p.hi > cutoff {
				continue
			}
			kept, err := s.dropPartition(ctx, t, p)
			if lockBusy(err) {
				s.log.Info("postgres: a day past retention waits for its table's lock; the next sweep tries again",
					"partition", p.name)
				r.Postponed++
				break // as in ensureDays
			}
			if err != nil {
				return r, classify(err)
			}
			r.Dropped++
			r.Kept += kept
		}
	}
	return r, nil
}

// dropPartition removes one partition whose range is past retention. In
// one transaction it detaches the partition (its table's lock, held some
// tens of milliseconds), reads the keys of its rows still in flight from
// partial indexes, and copies those rows back into the table, where the
// default partition takes them; then it drops the partition. Before the
// lock it reads those rows once, so the copy finds them in memory, and
// records the objects of its bodies as pending deletes (the blob sweeper
// deletes an object only once no body names it); under the lock, those of
// bodies whose message settled meanwhile. A crash after the detach leaves a table that
// dropDetached drops.
func (s *Store) dropPartition(ctx context.Context, t dayTable, p partition) (kept int, err error) {
	name := pgx.Identifier{p.name}.Sanitize()
	parent := pgx.Identifier{t.name}.Sanitize()
	keep := strings.ReplaceAll(t.keep, "{p}", name)
	lo := p.lo
	if lo == "" {
		lo = "00000000-0000-0000-0000-000000000000"
	}
	keysOf := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) ([]string, error) {
		var bounds []any
		if strings.Contains(keep, "$1") {
			bounds = []any{lo, p.hi}
		}
		rows, err := q.Query(ctx, keep, bounds...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	// Before the lock: the rows in flight now, read once so that their
	// pages are in memory when the lock's copy reads them again.
	before, err := keysOf(s.pool)
	if err != nil {
		return 0, err
	}
	if _, err := s.pool.Exec(ctx, `SELECT count(*) FROM (SELECT * FROM `+name+` WHERE `+pgx.Identifier{t.key}.Sanitize()+
		` = ANY($1::uuid[])) x`, before); err != nil {
		return 0, err
	}
	if t.bodies {
		if _, err := s.pool.Exec(ctx, `INSERT INTO blob_deletes (key, org_id)
			SELECT DISTINCT blob_key, org_id FROM `+name+` WHERE blob_key <> '' AND NOT message_id = ANY($1::uuid[])
			ON CONFLICT (key) DO NOTHING`, before); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, q := range []string{
		`SELECT pg_advisory_xact_lock(` + fmt.Sprint(partitionLock) + `)`,
		`SET LOCAL lock_timeout = '` + dropLockTimeout + `'`,
		`ALTER TABLE ` + parent + ` DETACH PARTITION ` + name,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return 0, err
		}
	}
	t1 := time.Now()
	keys, err := keysOf(tx)
	if err != nil {
		return 0, err
	}
	if t.bodies {
		if _, err := tx.Exec(ctx, `INSERT INTO blob_deletes (key, org_id)
			SELECT DISTINCT blob_key, org_id FROM `+name+`
			 WHERE message_id = ANY($1::uuid[]) AND NOT message_id = ANY($2::uuid[]) AND blob_key <> ''
			ON CONFLICT (key) DO NOTHING`, before, keys); err != nil {
			return 0, err
		}
	}
	t2 := time.Now()
	tag, err := tx.Exec(ctx, `INSERT INTO `+parent+` SELECT * FROM `+name+` WHERE `+pgx.Identifier{t.key}.Sanitize()+` = ANY($1::uuid[])`, keys)
	if err != nil {
		return 0, err
	}
	t3 := time.Now()
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	t4 := time.Now()
	kept = int(tag.RowsAffected())
	_, err = s.pool.Exec(ctx, `DROP TABLE `+name)
	// The table's writes waited from the detach to the commit: how long,
	// step by step, says what a day's drop costs an ack.
	s.log.Info("postgres: dropped a day past retention", "partition", p.name, "rows_kept_in_flight", kept,
		"lock_held", t4.Sub(t0), "detach", t1.Sub(t0), "keys", t2.Sub(t1), "copy", t3.Sub(t2), "commit", t4.Sub(t3),
		"drop", time.Since(t4))
	return kept, err
}

// dropDetached drops the tables a crash left detached between a day's
// detach and its drop: their rows in flight were copied back in the
// detach's own transaction.
func (s *Store) dropDetached(ctx context.Context) error {
	names := make([]string, len(dayTables))
	for i, t := range dayTables {
		names[i] = t.name
	}
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_class c
		 WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND NOT c.relispartition
		   AND c.relname ~ ('^(' || array_to_string($1::text[], '|') || ')_(p[0-9]{8}|legacy)$')`, names)
	if err != nil {
		return classify(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return classify(err)
	}
	for _, n := range left {
		if _, err := s.pool.Exec(ctx, `DROP TABLE `+pgx.Identifier{n}.Sanitize()); err != nil {
			return classify(err)
		}
	}
	return nil
}

// ForgetKeys deletes up to limit deduplication keys (message identities,
// event keys) whose message or event left with its day, returning how
// many. These tables cannot be partitioned by day (a key must stay unique
// across days), so their rows leave in small batches, paced by the caller.
func (s *Store) ForgetKeys(ctx context.Context, limit int) (int, error) {
	n := 0
	for _, k := range []struct{ table, column, owner string }{
		{"message_identities", "message_id", "messages"},
		{"event_keys", "event_id", "events"},
	} {
		if n >= limit {
			break
		}
		parts, err := partitions(ctx, s.pool, k.owner)
		if err != nil {
			return n, classify(err)
		}
		// floor is the first id a partition other than the default holds:
		// a key naming an id below it names a dropped row, unless that row
		// was kept in flight in the default partition.
		if len(parts) == 0 || parts[0].dflt || parts[0].lo == "" {
			continue
		}
		floor := parts[0].lo
		from := "00000000-0000-0000-0000-000000000000"
		if v, ok := s.forgotten.Load(k.table); ok {
			from = v.(string)
		}
		var deleted []string
		rows, err := s.pool.Query(ctx, `DELETE FROM `+k.table+` WHERE ctid = ANY(ARRAY(
			SELECT x.ctid FROM `+k.table+` x WHERE x.`+k.column+` >= $1 AND x.`+k.column+` < $2
			   AND NOT EXISTS (SELECT 1 FROM `+k.owner+`_default d WHERE d.id = x.`+k.column+`)
			 ORDER BY x.`+k.column+` LIMIT $3))
			RETURNING `+k.column+`::text`, from, floor, limit-n)
		if err == nil {
			deleted, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return n, classify(err)
		}
		n += len(deleted)
		if len(deleted) > 0 {
			s.forgotten.Store(k.table, slices.Max(deleted))
		}
	}
	return n, nil
}

package inbox

import (
	"errors"
	"fmt"
	"strings"
)

// statements are a dialect's SQL, one statement per job, and its reading
// of the errors worth another try.
type statements struct {
	create []string // the table, then (where it is a statement of its own) its index
	probe  string   // succeeds when the table exists
	// claim records an event id with outcome 'handled', inside the
	// application's transaction. It is the transaction's first statement:
	// a concurrent copy of the event blocks on the key until the first
	// transaction ends, then inserts nothing (committed: a duplicate) or
	// goes on (rolled back: its turn). It affects 0 rows for a duplicate.
	claim   string
	ignored string // marks a claimed id's outcome 'ignored'
	outcome string // the recorded outcome of an id
	prune   string // deletes the records older than a time (unix ms)
	// transient reports an error a new transaction may not meet: a
	// deadlock victim, a serialization failure, a busy database.
	transient func(error) bool
}

func dialect(name, table string) (statements, error) {
	t := func(q string) string { return strings.ReplaceAll(q, "{table}", table) }
	switch name {
	case "postgres":
		return statements{
			create: []string{
				t(`CREATE TABLE IF NOT EXISTS {table} (event_id text PRIMARY KEY, outcome text NOT NULL, recorded_at bigint NOT NULL)`),
				t(`CREATE INDEX IF NOT EXISTS {table}_recorded_at ON {table} (recorded_at)`),
			},
			probe:     t(`SELECT 1 FROM {table} WHERE false`),
			claim:     t(`INSERT INTO {table} (event_id, outcome, recorded_at) VALUES ($1, 'handled', $2) ON CONFLICT (event_id) DO NOTHING`),
			ignored:   t(`UPDATE {table} SET outcome = 'ignored' WHERE event_id = $1`),
			outcome:   t(`SELECT outcome FROM {table} WHERE event_id = $1`),
			prune:     t(`DELETE FROM {table} WHERE recorded_at < $1`),
			transient: postgresTransient,
		}, nil
	case "mysql":
		return statements{
			// ascii_bin: ids compare byte for byte (the default collation
			// would take evt_A and evt_a for one id).
			create: []string{
				t(`CREATE TABLE IF NOT EXISTS {table} (event_id varchar(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, outcome varchar(16) NOT NULL, recorded_at bigint NOT NULL, INDEX {table}_recorded_at (recorded_at)) ENGINE=InnoDB`),
			},
			probe: t(`SELECT 1 FROM {table} WHERE 1 = 0`),
			// IGNORE turns only the duplicate key into "0 rows" here: the id
			// is checked printable ASCII of at most 255 bytes before, so no
			// value can be truncated.
			claim:     t(`INSERT IGNORE INTO {table} (event_id, outcome, recorded_at) VALUES (?, 'handled', ?)`),
			ignored:   t(`UPDATE {table} SET outcome = 'ignored' WHERE event_id = ?`),
			outcome:   t(`SELECT outcome FROM {table} WHERE event_id = ?`),
			prune:     t(`DELETE FROM {table} WHERE recorded_at < ?`),
			transient: mysqlTransient,
		}, nil
	case "sqlite":
		return statements{
			create: []string{
				t(`CREATE TABLE IF NOT EXISTS {table} (event_id TEXT PRIMARY KEY, outcome TEXT NOT NULL, recorded_at INTEGER NOT NULL)`),
				t(`CREATE INDEX IF NOT EXISTS {table}_recorded_at ON {table} (recorded_at)`),
			},
			probe:     t(`SELECT 1 FROM {table} WHERE 0`),
			claim:     t(`INSERT INTO {table} (event_id, outcome, recorded_at) VALUES (?, 'handled', ?) ON CONFLICT (event_id) DO NOTHING`),
			ignored:   t(`UPDATE {table} SET outcome = 'ignored' WHERE event_id = ?`),
			outcome:   t(`SELECT outcome FROM {table} WHERE event_id = ?`),
			prune:     t(`DELETE FROM {table} WHERE recorded_at < ?`),
			transient: sqliteTransient,
		}, nil
	}
	return statements{}, fmt.Errorf(`inbox: dialect %q: use "postgres", "mysql" or "sqlite"`, name)
}

// postgresTransient: serialization_failure and deadlock_detected, read
// through the SQLState method that pgx's and lib/pq's errors have.
func postgresTransient(err error) bool {
	var e interface{ SQLState() string }
	if !errors.As(err, &e) {
		return false
	}
	return e.SQLState() == "40001" || e.SQLState() == "40P01"
}

// mysqlTransient: ER_LOCK_DEADLOCK (1213), which InnoDB raises when copies
// of one id wait on its key and the holder rolls back. go-sql-driver's
// errors have no method to read the number by; their text begins with it.
func mysqlTransient(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if strings.HasPrefix(err.Error(), "Error 1213") {
			return true
		}
	}
	return false
}

// sqliteTransient: SQLITE_BUSY and SQLITE_LOCKED, as modernc.org/sqlite's
// Code method or any driver's message says them.
func sqliteTransient(err error) bool {
	var e interface{ Code() int }
	if errors.As(err, &e) {
		code := e.Code() & 0xff // the primary code of an extended one (SQLITE_BUSY_SNAPSHOT is 517)
		return code == 5 || code == 6
	}
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked")
}

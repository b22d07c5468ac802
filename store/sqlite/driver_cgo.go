//go:build sqlite_cgo

package sqlite

// With the sqlite_cgo build tag (and mattn's sqlite_fts5, which search
// needs) the store runs on github.com/mattn/go-sqlite3, SQLite's C through
// cgo, in place of driver_modernc.go. docs/performance.md says what it
// measured against the default.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/mattn/go-sqlite3"
)

// replicable: the replicator (package replica) runs on modernc.org/sqlite,
// a second SQLite in the process that would not see this one's locks on
// the file.
const replicable = false

// cgoDriver registers intake_contains on each connection it opens.
var cgoDriver = &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc(containsFunc, func(data, match any) (any, error) { return intakeContains(data, match) }, true)
}}

// openDB opens the database file at path: each of pragmas ("busy_timeout(10000)")
// runs on every new connection, and with immediate a transaction begins
// IMMEDIATE, taking the write lock at once.
func openDB(path string, immediate bool, pragmas ...string) (*sql.DB, error) {
	dsn := "file:" + path
	if immediate {
		dsn += "?_txlock=immediate"
	}
	return sql.OpenDB(connector{dsn, pragmas}), nil
}

// connector runs its pragmas on each connection it opens, after mattn's
// own (its DSN names only some pragmas, and sets busy_timeout and
// synchronous whether asked or not).
type connector struct {
	dsn     string
	pragmas []string
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := cgoDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pragmas {
		if _, err := conn.(*sqlite3.SQLiteConn).Exec("PRAGMA "+p, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (connector) Driver() driver.Driver { return cgoDriver }

// sqliteError is the extended result code and the message of the SQLite
// error in err's chain, if there is one.
func sqliteError(err error) (code int, msg string, ok bool) {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return 0, "", false
	}
	return int(se.ExtendedCode), se.Error(), true
}

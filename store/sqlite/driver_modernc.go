//go:build !sqlite_cgo

package sqlite

// The default driver, modernc.org/sqlite: SQLite translated to Go, so that
// intake builds with CGO_ENABLED=0 into one static binary. With the
// sqlite_cgo build tag driver_cgo.go takes this file's place.

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"

	"modernc.org/sqlite"
)

// replicable: the replicator (package replica) runs on this driver too, so
// the two share SQLite's locks on the file within the process.
const replicable = true

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(containsFunc, 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		return intakeContains(args[0], args[1])
	})
}

// openDB opens the database file at path: each of pragmas ("busy_timeout(10000)")
// runs on every new connection, and with immediate a transaction begins
// IMMEDIATE, taking the write lock at once.
func openDB(path string, immediate bool, pragmas ...string) (*sql.DB, error) {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if immediate {
		q.Set("_txlock", "immediate")
	}
	dsn := "file:" + path
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	return sql.Open("sqlite", dsn)
}

// sqliteError is the extended result code and the message of the SQLite
// error in err's chain, if there is one.
func sqliteError(err error) (code int, msg string, ok bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, "", false
	}
	return se.Code(), se.Error(), true
}

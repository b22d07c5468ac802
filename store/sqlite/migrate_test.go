package sqlite

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
)

// row is a statement that stores a row, with its arguments.
type row struct {
	sql  string
	args []any
}

// openFromMigration stores rows in a new database migrated up to version,
// then opens it as intake does, which migrates it the rest of the way.
func openFromMigration(t *testing.T, version int64, rows ...row) *Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	if err := create(ctx, path); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(path, false)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.ExecContext(ctx, r.sql, r.args...); err != nil {
			t.Fatalf("%s: %v", r.sql, err)
		}
	}
	db.Close()

	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

package postgres

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/intakehq/intake/store/postgres/pgtest"
)

// row is a statement and its arguments, run at an earlier migration.
type row struct {
	sql  string
	args []any
}

// openFromMigration opens a store on a database of its own that stood at
// migration version, holding rows, when the store opened (and migrated) it.
func openFromMigration(t *testing.T, version int64, rows ...row) *Store {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Database(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	dir, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := pool.Exec(ctx, r.sql, r.args...); err != nil {
			t.Fatalf("%s: %v", r.sql, err)
		}
	}
	db.Close()
	pool.Close()
	return openURL(t, url, 4)
}

package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// A staff session signed in before people could sign in keeps working
// once the store is migrated: it is a token's session, with no person.
func TestATokensSessionFromBeforePeopleSurvivesTheMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	if err := create(ctx, path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if _, err := db.ExecContext(ctx, `INSERT INTO console_sessions (id_hash, org_id, key_hash, actor, csrf, created_at, expires_at)
		VALUES (X'01', '', X'02', 'staff', 'csrf', ?, ?)`, ts(now), ts(now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.SessionByHash(ctx, []byte{1}, now)
	if err != nil || got.Actor != "staff" || string(got.KeyHash) != "\x02" || got.Subject != "" || got.Email != "" || got.Role != "" {
		t.Fatalf("the old session after the migration = %+v %v", got, err)
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func pragmaInt(t *testing.T, db *sql.DB, name string) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestNewDatabaseGetsLargePagesAndAWALBudgetInBytes(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := pragmaInt(t, s.write, "page_size"); got != pageSize {
		t.Errorf("page_size = %d, want %d", got, pageSize)
	}
	if got := pragmaInt(t, s.write, "wal_autocheckpoint"); got*pageSize != walCheckpointBytes {
		t.Errorf("wal_autocheckpoint = %d pages of %d bytes, want %d bytes", got, pageSize, walCheckpointBytes)
	}
}

// A database created before intake chose its page size keeps SQLite's
// default one and opens as before.
func TestExistingDatabaseKeepsItsPageSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intake.db")
	old, err := openDB(path, false, "journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec("CREATE TABLE earlier (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	before := pragmaInt(t, old, "page_size")
	old.Close()
	if before == pageSize {
		t.Fatalf("SQLite's default page size is already %d: this test proves nothing", pageSize)
	}
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := pragmaInt(t, s.write, "page_size"); got != before {
		t.Errorf("page_size = %d after opening, want the database's own %d", got, before)
	}
}

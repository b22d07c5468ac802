package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestWriterCommitsAreFsyncedInWAL reads the durability settings off the
// writer connection itself, on a new database and again on reopening it: a
// SIGKILL test cannot tell synchronous=NORMAL or OFF from FULL, since the
// kernel keeps what a dead process wrote, but a power cut can.
func TestWriterCommitsAreFsyncedInWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intake.db")
	for _, when := range []string{"created", "reopened"} {
		s, err := Open(context.Background(), Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		// 2 is FULL: every commit waits for the WAL's fsync.
		if got := pragmaInt(t, s.write, "synchronous"); got != 2 {
			t.Errorf("%s: writer PRAGMA synchronous = %d, want 2 (FULL)", when, got)
		}
		var mode string
		if err := s.write.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("%s: writer journal_mode = %q, want wal", when, mode)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
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

// TestWritesSentAsTheStoreClosesAreAnsweredAndCloseReturns: writers that
// keep writing while the store closes each get an answer, a commit or
// the store's closing, and Close returns. A write that reached the queue
// after the writer had failed what it held once waited forever, and so
// did Close, behind the search indexer's step.
func TestWritesSentAsTheStoreClosesAreAnsweredAndCloseReturns(t *testing.T) {
	for round := range 5 {
		s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "intake.db")})
		if err != nil {
			t.Fatal(err)
		}
		const writers = 8
		answered := make(chan error, writers)
		started := make(chan struct{}, writers)
		for range writers {
			go func() {
				started <- struct{}{}
				for {
					if err := s.tx(context.Background(), func(*wtx) error { return nil }); err != nil {
						answered <- err
						return
					}
				}
			}()
		}
		for range writers {
			<-started
		}
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		for i := range writers {
			select {
			case err := <-answered:
				if !errors.Is(err, errClosed) {
					t.Fatalf("round %d: a write as the store closed: %v, want the store's closing", round, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("round %d: %d of %d writers still unanswered a minute after Close began", round, writers-i, writers)
			}
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("round %d: Close has not returned a minute after every writer was answered", round)
		}
	}
}

package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestTheWriterPreparesAStatementAfterItsFirstUse: a statement the writer
// runs that is not among the hot ones is parsed once, then prepared before
// the next transaction and reused, and a statement that cannot be
// prepared is not tried again.
func TestTheWriterPreparesAStatementAfterItsFirstUse(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const q = `SELECT count(*) FROM routes WHERE consumer_id = ?`
	run := func(query string) error {
		return s.tx(ctx, func(tx *wtx) error {
			var n int
			return tx.QueryRowContext(ctx, query, "x").Scan(&n)
		})
	}
	if err := run(q); err != nil {
		t.Fatal(err)
	}
	if err := run(q); err != nil { // prepared before this transaction
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	s.tx(ctx, func(*wtx) error { done <- s.stmts[q] != nil; return nil })
	if !<-done {
		t.Fatal("a statement run twice is still parsed on each use")
	}
	const bad = `SELECT nope FROM nowhere WHERE x = ?`
	for range 2 {
		if err := run(bad); err == nil {
			t.Fatal("a bad statement ran")
		}
	}
	s.tx(ctx, func(*wtx) error { done <- s.unpreparable[bad] && s.stmts[bad] == nil; return nil })
	if !<-done {
		t.Fatal("a statement that cannot be prepared is not set aside")
	}
}

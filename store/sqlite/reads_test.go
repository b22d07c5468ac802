package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// TestOperatorReadsRunOnReadersOfTheirOwnAndStopAtTheirDeadline: with every
// operator reader held, the pipeline's reads and the writer go on; an
// operator's read waits for its own readers; and a read scanning far past
// its deadline is interrupted at it.
func TestOperatorReadsRunOnReadersOfTheirOwnAndStopAtTheirDeadline(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "intake.db"), OperatorReaders: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	op := intake.OperatorRead(ctx)

	// A statement that would run for minutes stops at its context's end.
	short, cancel := context.WithTimeout(op, 50*time.Millisecond)
	defer cancel()
	var n int64
	err = s.reader(short).QueryRowContext(short,
		`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`).Scan(&n)
	if err == nil {
		t.Fatal("an endless scan on an operator's reader returned")
	}

	// Both operator readers held.
	var held []func() error
	for range 2 {
		conn, err := s.reads.Conn(op)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn.Close)
	}
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: time.Now()}
	if err := s.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte(org.ID)}); err != nil {
		t.Fatalf("a write while operators hold their readers: %v", err)
	}
	pipeline, cancelPipeline := context.WithTimeout(ctx, 10*time.Second)
	defer cancelPipeline()
	if _, err := s.ListOrgs(pipeline, intake.Scope{}); err != nil {
		t.Fatalf("a pipeline read while operators hold their readers: %v", err)
	}
	waiting, cancelWait := context.WithTimeout(op, 100*time.Millisecond)
	defer cancelWait()
	if _, err := s.ListOrgs(waiting, intake.Scope{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an operator's read with its readers all held: %v, want it to wait for them to its deadline", err)
	}
}

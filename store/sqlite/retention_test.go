package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Expired notices leave with the messages' retention, at most limit in one
// transaction, like the messages.
func TestExpiredNoticesLeaveInBoundedBatches(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{now.Add(-72 * time.Hour), now.Add(-71 * time.Hour), now.Add(-70 * time.Hour), now} {
		if _, err := s.write.ExecContext(ctx, `INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES (?, 'o', 'event.dead', 's', 'd', ?)`,
			string(rune('a'+i)), ts(at)); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		var n int
		if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM notices`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, want := range []int{2, 1, 1} {
		if _, err := s.DeleteSettled(ctx, now, 24*time.Hour, 2); err != nil {
			t.Fatal(err)
		}
		if n := left(); n != want {
			t.Fatalf("%d notices left, want %d", n, want)
		}
	}
}

package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAClaimReadsItsPartialIndexesNotTheBacklog: the message claim walks
// the partial indexes of due messages and of expired leases in their
// order, so that a claim reads its batch however long the backlog is; a
// plan on the (state, received_at) index would read and sort every queued
// message for every claim.
func TestAClaimReadsItsPartialIndexesNotTheBacklog(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rows, err := s.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+claimMessagesSQL, ts(now.Add(time.Minute)), ts(now), 64, "[]")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "\n")
	for _, want := range []string{"USING INDEX messages_due (next_attempt_at<?)", "USING INDEX messages_leased (lease_until<?)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the claim's plan does not read %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "messages_state_received") {
		t.Errorf("the claim reads the backlog through messages_state_received:\n%s", got)
	}
}

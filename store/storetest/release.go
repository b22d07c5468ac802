package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testReleaseUntilLater: a message released until a later time is
// claimed by no one before it, then as the same attempt, however often it
// was released: releases spend none of its attempts.
func testReleaseUntilLater(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	f.ingest(t, s, `{}`, t0)
	now := t0
	for range intake.DefaultMaxAttempts + 2 {
		c := claimOne(t, s, now)
		if c.Attempt != 1 {
			t.Fatalf("claimed as attempt %d after releases, want 1", c.Attempt)
		}
		if err := s.ReleaseMessage(ctx, now, 10*time.Second, c.Message.ID, c.Attempt); err != nil {
			t.Fatal(err)
		}
		if early := claimAll(t, s, now.Add(9*time.Second)); len(early) != 0 {
			t.Fatalf("claimed %d messages before the release ended", len(early))
		}
		now = now.Add(10 * time.Second)
	}
}

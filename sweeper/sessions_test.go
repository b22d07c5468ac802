package sweeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/sweeper"
)

func TestSweepDeletesExpiredConsoleSessionsAndKeepsLiveOnes(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	c := testkit.NewClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	session := func(id string, ttl time.Duration) intake.ConsoleSession {
		return intake.ConsoleSession{IDHash: []byte(id), KeyHash: []byte("staff"), Actor: "staff", CSRF: "c", CreatedAt: c.Now(), ExpiresAt: c.Now().Add(ttl)}
	}
	// Five expire within the hour, more than one batch; one lasts a day.
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		if err := s.CreateSession(ctx, session(id, time.Duration(i+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateSession(ctx, session("live", 24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	sw := sweeper.New(sweeper.Config{Store: s, Clock: c, Batch: 2})
	c.Advance(time.Hour)
	if _, _, err := sw.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// The sweep left nothing expired: a sweep at the same moment finds none.
	if n, err := s.DeleteExpiredSessions(ctx, c.Now(), 100); err != nil || n != 0 {
		t.Fatalf("after the sweep %d expired sessions were left (%v)", n, err)
	}
	if _, err := s.SessionByHash(ctx, []byte("live"), c.Now()); err != nil {
		t.Fatalf("the live session was swept: %v", err)
	}
}

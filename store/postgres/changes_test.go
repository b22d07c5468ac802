package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

func TestAChangeInOneProcessMovesAnothersCounterWithinASecond(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := openURL(t, url, 4), openURL(t, url, 4)
	o := newOrg(t, a, "acme")
	waitListening(t, a, 2)

	before := b.Changes().Version()
	disabled := o.ep
	disabled.Enabled = false
	if err := a.UpdateEndpoint(ctx, intake.Scope{}, disabled); err != nil {
		t.Fatal(err)
	}
	waitMoved(t, b, before, time.Second, "a disabled an endpoint")
}

func TestALostListenerMovesTheCounterWhenItListensAgain(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	waitListening(t, s, 1)
	before := s.Changes().Version()
	// Changes announced while it was away were never heard.
	if _, err := s.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	waitMoved(t, s, before, 5*time.Second, "the listener reconnected")
}

// waitMoved polls s's change counter until it moved past before, for at
// most within.
func waitMoved(t *testing.T, s *Store, before uint64, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for s.Changes().Version() == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the counter did not move within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

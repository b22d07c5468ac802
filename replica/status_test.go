package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/testkit"
)

// The lag is how long ago the replica last held every commit made by
// then: it grows while syncs fail, each failure counted, and drops once
// one succeeds. While syncs fail a waiter is answered at once.
func TestStatusTellsTheLagTheLastSyncAndTheFailures(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	path := filepath.Join(t.TempDir(), "intake.db")
	db := openDB(t, path)
	u := fileURL(t)
	// Every: an hour, so only the test's syncs and Litestream's
	// notifications of new transactions run one.
	r, err := Start(ctx, Options{URL: u, Path: path, StoreID: "s", Clock: clock, Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)

	clock.Advance(5 * time.Second)
	if st := r.Status(); st.Lag != 5*time.Second || !st.LastSync.IsZero() || st.Errors != 0 || st.Err != nil {
		t.Fatalf("before any sync: %+v, want a lag of 5s since replicating began, no sync, no error", st)
	}
	insert(t, db, "a")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.Lag != 0 || !st.LastSync.Equal(t0.Add(5*time.Second)) || st.Errors != 0 {
		t.Fatalf("synced: %+v, want no lag, the last sync at t0+5s", st)
	}

	// The replica's directory becomes a file: every write to it fails.
	root := strings.TrimPrefix(u, "file://")
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	insert(t, db, "b")
	if err := r.Sync(ctx); err == nil {
		t.Fatal("a sync to an unreachable replica succeeded")
	}
	clock.Advance(3 * time.Second)
	st := r.Status()
	if st.Lag != 3*time.Second || st.Errors < 1 || st.Err == nil {
		t.Fatalf("failing: %+v, want a lag of 3s, failures counted, the error", st)
	}
	if err := r.Sync(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a waiter while syncs fail: %v, want ErrUnreachable at once", err)
	}

	// Back: the next try (the loop's, every Options.Every) succeeds.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(root+".away", root); err != nil {
		t.Fatal(err)
	}
	if err := r.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.Lag != 0 || st.Err != nil || !st.LastSync.Equal(t0.Add(8*time.Second)) || st.Errors < 1 {
		t.Fatalf("recovered: %+v, want no lag, no error, the failures still counted", st)
	}
	insert(t, db, "c")
	if err := r.Sync(ctx); err != nil {
		t.Fatalf("recovered, a waiter: %v", err)
	}
	restored := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, restored, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, restored); got != "a,b,c" {
		t.Errorf("restored %q, want every commit shipped once the replica was back", got)
	}
}

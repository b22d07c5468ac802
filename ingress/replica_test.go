package ingress_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/ingress"
	"github.com/intakehq/intake/replica"
	"github.com/intakehq/intake/store/sqlite"
)

// replicaFunc is a replica whose Sync is a function.
type replicaFunc func(context.Context) error

func (f replicaFunc) Sync(ctx context.Context) error { return f(ctx) }

// With --replicate-sync a webhook is acknowledged only once its commit is
// in the replica: the replica is asked after the commit, and one that
// cannot be reached gets the provider a 503 with Retry-After, the message
// committed here all the same (its retry is then a duplicate).
func TestIngressAcknowledgesOnlyWhatTheReplicaHolds(t *testing.T) {
	var e *env
	var stored []int
	var down error
	e = setup(t, ingress.Config{Replica: replicaFunc(func(context.Context) error {
		stored = append(stored, len(e.stored(t)))
		return down
	})}, nil)

	w := e.post("/webhooks/"+e.token, strings.NewReader(`{"n":1}`), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("replica reached: %d, want 200", w.Code)
	}
	if len(stored) != 1 || stored[0] != 1 {
		t.Fatalf("the replica was asked %d times, with %v messages committed, want once after the commit", len(stored), stored)
	}

	down = errors.New("the replica cannot be reached")
	w = e.post("/webhooks/"+e.token, strings.NewReader(`{"n":2}`), nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "10" {
		t.Fatalf("replica unreachable: %d, Retry-After %q, want 503 with Retry-After 10", w.Code, w.Header().Get("Retry-After"))
	}
	assertAnswerRevealsNothing(t, w, e)
	if n := len(e.stored(t)); n != 2 {
		t.Errorf("%d messages stored, want the refused one committed here too", n)
	}

	down = nil
	if w := e.post("/webhooks/"+e.token, strings.NewReader(`{"n":3}`), nil); w.Code != http.StatusOK {
		t.Fatalf("replica back: %d, want 200", w.Code)
	}
}

// On the real replicator: what was acknowledged is in a store restored
// from the replica the moment after, with no sync of its own.
func TestAnAcknowledgedWebhookIsInAStoreRestoredAtOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	s, err := sqlite.Open(ctx, sqlite.Options{Path: path, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := "file://" + filepath.Join(t.TempDir(), "replica")
	// Every: an hour, so only commits and acknowledgements ship.
	rep, err := replica.Start(ctx, replica.Options{URL: u, Path: path, StoreID: id, Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		rep.Close(ctx)
	}()
	e := setupOn(t, s, ingress.Config{Replica: rep}, nil)
	for i := range 3 {
		if w := e.post("/webhooks/"+e.token, strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)), nil); w.Code != http.StatusOK {
			t.Fatalf("webhook %d: %d", i, w.Code)
		}
	}
	restored := filepath.Join(t.TempDir(), "intake.db")
	if err := replica.Restore(ctx, u, restored, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.Open(ctx, sqlite.Options{Path: restored})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	page, err := r.ListMessages(ctx, intake.Scope{}, intake.MessageFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 3 {
		t.Errorf("the restored store holds %d messages, want the 3 acknowledged", len(page.Items))
	}
}

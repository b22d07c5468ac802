package blob_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/internal/testkit"
)

// TestWatchedObjectStorageBeginsAnOutageWhenUnreachableAndEndsItWhenItAnswers:
// a call that finds object storage unreachable begins an outage, logged
// once however many calls fail; what the outage makes the rest of intake
// log is held back after its first line; a call answered at least
// outage.Quiet after the last failure ends it. An object not found, or a
// call its caller gave up, says nothing of an outage.
func TestWatchedObjectStorageBeginsAnOutageWhenUnreachableAndEndsItWhenItAnswers(t *testing.T) {
	var logged bytes.Buffer
	base := slog.New(slog.NewTextHandler(&logged, nil))
	clock := testkit.NewClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	w := outage.New("object storage", base, clock)
	log := slog.New(w.Handler(base.Handler()))
	mem := &blob.Memory{}
	b := blob.Watched(mem, w)
	ctx := context.Background()

	if _, _, err := b.Open(ctx, "missing"); err == nil || w.Down() {
		t.Fatalf("an object not found: %v, outage %v; want an error and no outage", err, w.Down())
	}
	mem.SetDown(true)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Put(gone, "k", strings.NewReader("body"), 4); err == nil || w.Down() {
		t.Fatalf("a put its caller gave up: %v, outage %v; want an error and no outage", err, w.Down())
	}
	for range 5 {
		err := b.Put(ctx, "k", strings.NewReader("body"), 4)
		if err == nil || !w.Down() {
			t.Fatalf("a put while object storage is down: %v, outage %v; want an error and an outage", err, w.Down())
		}
		log.Error("ingress: object storage failed; a large body is not acknowledged", "err", err)
	}
	mem.SetDown(false)
	clock.Advance(outage.Quiet)
	if err := b.Put(ctx, "k", strings.NewReader("body"), 4); err != nil || w.Down() {
		t.Fatalf("a put once object storage is back: %v, outage %v; want it stored and the outage over", err, w.Down())
	}
	for line, want := range map[string]int{
		"object storage: unreachable":     1,
		"ingress: object storage failed":  1,
		"object storage: reachable again": 1,
		"repeats_held_back=4":             1,
	} {
		if n := strings.Count(logged.String(), line); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", line, n, want, logged.String())
		}
	}
}

package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/fair"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// receiveBlob stores a message of c's endpoint ep whose body is an object
// in blobs, as ingress stores a body above the blob threshold.
func (e *env) receiveBlob(t *testing.T, blobs intake.Blobs, c intake.Connection, ep intake.Endpoint, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: c.OrgID, ConnectionID: c.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Test-Secret": {"new-secret"}}, Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: e.clock.Now(), State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	m.BlobKey = intake.BlobKey(m.ReceivedAt, m.ID)
	if err := blobs.Put(context.Background(), m.BlobKey, bytes.NewReader([]byte(body)), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// receiveInDatabase records a queued message for connection c whose body
// the database keeps.
func (e *env) receiveInDatabase(t *testing.T, c intake.Connection, ep intake.Endpoint, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	m := &intake.Message{ID: intake.NewID(), OrgID: c.OrgID, ConnectionID: c.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Test-Secret": {"new-secret"}}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]),
		ReceivedAt: e.clock.Now(), State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: e.clock.Now()}
	if err := e.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// countedReleases counts each message's releases.
type countedReleases struct {
	*sqlite.Store
	mu       sync.Mutex
	released map[string]int
}

func (c *countedReleases) ReleaseMessage(ctx context.Context, now time.Time, after time.Duration, id string, attempt int) error {
	c.mu.Lock()
	c.released[id]++
	c.mu.Unlock()
	return c.Store.ReleaseMessage(ctx, now, after, id, attempt)
}

func (c *countedReleases) of(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.released[id]
}

// TestAStoredBodyWaitsForRoomInTheBodyMemoryBudget: a body read back from
// the blob store, or from the database when it is larger than a claim
// reads with its message, is charged BodyCharge times its size while its
// message is processed. Org B, holding its whole bound already, has its
// message released while org A's body, which fits, is processed; its waits
// spend no attempt. Once B's room is given back, B's message is processed
// too, and every byte is given back after the settles.
func TestAStoredBodyWaitsForRoomInTheBodyMemoryBudget(t *testing.T) {
	for _, kept := range []struct {
		name string
		pad  int
		put  func(e *env, blobs intake.Blobs, c intake.Connection, ep intake.Endpoint, body string) string
	}{
		{"blob store", 900, func(e *env, blobs intake.Blobs, c intake.Connection, ep intake.Endpoint, body string) string {
			return e.receiveBlob(t, blobs, c, ep, body)
		}},
		{"database", intake.ClaimBodyLimit + 1000, func(e *env, _ intake.Blobs, c intake.Connection, ep intake.Endpoint, body string) string {
			return e.receiveInDatabase(t, c, ep, body)
		}},
	} {
		t.Run(kept.name, func(t *testing.T) {
			e := setup(t)
			blobs := &blob.Memory{}
			bConn, bEp := e.otherOrg(t)
			pad := string(bytes.Repeat([]byte("x"), kept.pad))
			bBody := fmt.Sprintf(`{"id":"evt_b","type":"big","pad":%q}`, pad)
			aBody := fmt.Sprintf(`{"id":"evt_a","type":"big","pad":%q}`, pad)
			charge := int64(worker.BodyCharge * len(bBody))
			budget := &fair.Budget{What: "body memory", Total: 4 * charge, PerOrg: charge + charge/2, Wait: 10 * time.Millisecond}
			held, err := budget.Take(context.Background(), bConn.OrgID, charge)
			if err != nil {
				t.Fatal(err)
			}
			b := kept.put(e, blobs, bConn, bEp, bBody)
			a := kept.put(e, blobs, e.conn, e.ep, aBody)

			store := &countedReleases{Store: e.store, released: map[string]int{}}
			w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
				Concurrency: 4, Blobs: blobs, BodyMemory: budget})
			runWorker(t, w)
			processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
			testkit.WaitFor(t, "A's body processed while B holds its bound", func() bool { return processed(a) })
			// Claimed and released again while it waits: never settled, and no
			// attempt spent.
			testkit.WaitFor(t, "B's message released for want of room", func() bool { return store.of(b) > 0 })
			if m := e.message(t, b); m.State == intake.MessageProcessed || m.Attempt > 1 || len(m.EventIDs) != 0 {
				t.Fatalf("B's message past its bound is %s at attempt %d with %d events; want it waiting", m.State, m.Attempt, len(m.EventIDs))
			}

			held()
			testkit.WaitFor(t, "B's body processed once its room was given back", func() bool { return processed(b) })
			testkit.WaitFor(t, "every byte given back after the settles", func() bool { return budget.Held("") == 0 })
			for _, id := range []string{a, b} {
				if m := e.message(t, id); len(m.EventIDs) != 1 || m.Attempt != 1 {
					t.Fatalf("message %s made %d events at attempt %d, want 1 at the first", id, len(m.EventIDs), m.Attempt)
				}
			}
		})
	}
}

// An org whose stored body waits for room in its body memory share holds
// one of the worker's slots, not all of them: its next messages wait queued,
// so another org's message starts in a free slot at once rather than after
// the wait. Once B's room is given back, B's messages are processed one by
// one, each at its first attempt.
func TestAnOrgWaitingForBodyMemoryHoldsOneSlotWhileAnotherOrgsMessageStarts(t *testing.T) {
	e := setup(t)
	blobs := &blob.Memory{}
	bConn, bEp := e.otherOrg(t)
	pad := string(bytes.Repeat([]byte("x"), 900))
	var b []string
	for i := range 4 {
		b = append(b, e.receiveBlob(t, blobs, bConn, bEp, fmt.Sprintf(`{"id":"evt_b%d","type":"big","pad":%q}`, i, pad)))
	}
	charge := int64(worker.BodyCharge * (len(pad) + 40))
	// A wait far longer than the test: a waiter holds its slot throughout.
	budget := &fair.Budget{What: "body memory", Total: 8 * charge, PerOrg: charge + charge/2, Wait: time.Minute}
	held, err := budget.Take(context.Background(), bConn.OrgID, charge)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 2, Blobs: blobs, BodyMemory: budget})
	runWorker(t, w)
	testkit.WaitFor(t, "B's first message claimed", func() bool {
		for _, id := range b {
			if e.message(t, id).State == intake.MessageProcessing {
				return true
			}
		}
		return false
	})
	a := e.receive(t, "new-secret", `{"id":"evt_a","type":"paid"}`)
	processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
	testkit.WaitFor(t, "A's message processed in the slot B does not hold", func() bool { return processed(a) })

	held()
	for _, id := range b {
		testkit.WaitFor(t, "each of B's messages processed once its room was given back", func() bool { return processed(id) })
		if m := e.message(t, id); m.Attempt != 1 || len(m.EventIDs) != 1 {
			t.Fatalf("B's message %s made %d events at attempt %d, want 1 at the first", id, len(m.EventIDs), m.Attempt)
		}
	}
	testkit.WaitFor(t, "every byte given back after the settles", func() bool { return budget.Held("") == 0 })
}

// gatedBlobs is object storage whose answers to opens overlap: an open
// waits until n are under way at once, or, when the others never come,
// gives up waiting after a while and answers alone.
type gatedBlobs struct {
	intake.Blobs
	n   int
	all chan struct{}

	mu      sync.Mutex
	open    int
	overlap bool
}

func (g *gatedBlobs) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	g.mu.Lock()
	if g.open++; g.open >= g.n && !g.overlap {
		g.overlap = true
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(2 * time.Second):
	}
	g.mu.Lock()
	g.open--
	g.mu.Unlock()
	return g.Blobs.Open(ctx, key)
}

func (g *gatedBlobs) overlapped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.overlap
}

// TestAnOrgsStoredBodiesAreReadSideBySideWhileThereIsRoom: reading a body
// from object storage is no wait for body memory. While the budget has
// room, an org's bodies are opened side by side, not one after another
// behind object storage's answers (which made a burst of large bodies wait
// minutes to be processed while object storage answered each in tens of
// milliseconds).
func TestAnOrgsStoredBodiesAreReadSideBySideWhileThereIsRoom(t *testing.T) {
	e := setup(t)
	mem := &blob.Memory{}
	var ids []string
	for i := range 2 {
		ids = append(ids, e.receiveBlob(t, mem, e.conn, e.ep, fmt.Sprintf(`{"id":"evt_%d","type":"big"}`, i)))
	}
	gate := &gatedBlobs{Blobs: mem, n: 2, all: make(chan struct{})}
	budget := &fair.Budget{What: "body memory", Total: 1 << 30, Wait: time.Minute}
	w := worker.New(worker.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 2, Blobs: gate, BodyMemory: budget})
	runWorker(t, w)
	for _, id := range ids {
		testkit.WaitFor(t, "each body processed", func() bool { return e.message(t, id).State == intake.MessageProcessed })
	}
	if !gate.overlapped() {
		t.Fatal("the org's second body was opened only once the first was read, with room for both")
	}
}

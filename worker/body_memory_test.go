package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/fair"
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

// TestABodyFromTheBlobStoreWaitsForRoomInTheBodyMemoryBudget: a body read
// back from the blob store is charged BodyCharge times its size while its
// message is processed. Org B, holding its whole bound already, has its
// message released while org A's body, which
// fits, is processed; its waits spend no attempt. Once B's room is given back, B's message is
// processed too, and every byte is given back after the settles.
func TestABodyFromTheBlobStoreWaitsForRoomInTheBodyMemoryBudget(t *testing.T) {
	e := setup(t)
	blobs := &blob.Memory{}
	bConn, bEp := e.otherOrg(t)
	pad := string(bytes.Repeat([]byte("x"), 900))
	bBody := fmt.Sprintf(`{"id":"evt_b","type":"big","pad":%q}`, pad)
	aBody := fmt.Sprintf(`{"id":"evt_a","type":"big","pad":%q}`, pad)
	charge := int64(worker.BodyCharge * len(bBody))
	budget := &fair.Budget{What: "body memory", Total: 4 * charge, PerOrg: charge + charge/2, Wait: 10 * time.Millisecond}
	held, err := budget.Take(context.Background(), bConn.OrgID, charge)
	if err != nil {
		t.Fatal(err)
	}
	b := e.receiveBlob(t, blobs, bConn, bEp, bBody)
	a := e.receiveBlob(t, blobs, e.conn, e.ep, aBody)

	w := worker.New(worker.Config{Store: e.store, Sealer: mustSealer(), Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 4, Blobs: blobs, BodyMemory: budget})
	runWorker(t, w)
	processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
	waitFor(t, "A's body processed while B holds its bound", func() bool { return processed(a) })
	// Claimed and released again while it waits: never settled, and no
	// attempt spent.
	if m := e.message(t, b); m.State == intake.MessageProcessed || m.Attempt > 1 || len(m.EventIDs) != 0 {
		t.Fatalf("B's message past its bound is %s at attempt %d with %d events; want it waiting", m.State, m.Attempt, len(m.EventIDs))
	}

	held()
	waitFor(t, "B's body processed once its room was given back", func() bool { return processed(b) })
	waitFor(t, "every byte given back after the settles", func() bool { return budget.Held("") == 0 })
	for _, id := range []string{a, b} {
		if m := e.message(t, id); len(m.EventIDs) != 1 || m.Attempt != 1 {
			t.Fatalf("message %s made %d events at attempt %d, want 1 at the first", id, len(m.EventIDs), m.Attempt)
		}
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
	w := worker.New(worker.Config{Store: e.store, Sealer: mustSealer(), Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 2, Blobs: blobs, BodyMemory: budget})
	runWorker(t, w)
	waitFor(t, "B's first message claimed", func() bool {
		for _, id := range b {
			if e.message(t, id).State == intake.MessageProcessing {
				return true
			}
		}
		return false
	})
	a := e.receive(t, "new-secret", `{"id":"evt_a","type":"paid"}`)
	processed := func(id string) bool { return e.message(t, id).State == intake.MessageProcessed }
	waitFor(t, "A's message processed in the slot B does not hold", func() bool { return processed(a) })

	held()
	for _, id := range b {
		waitFor(t, "each of B's messages processed once its room was given back", func() bool { return processed(id) })
		if m := e.message(t, id); m.Attempt != 1 || len(m.EventIDs) != 1 {
			t.Fatalf("B's message %s made %d events at attempt %d, want 1 at the first", id, len(m.EventIDs), m.Attempt)
		}
	}
	waitFor(t, "every byte given back after the settles", func() bool { return budget.Held("") == 0 })
}

package worker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/handoff"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// gatedSettles holds every settle until gate closes, and counts the
// attempts in flight and the most at once.
type gatedSettles struct {
	*sqlite.Store
	gate          chan struct{}
	inFlight, top atomic.Int32
}

func (g *gatedSettles) SettleMessage(ctx context.Context, now time.Time, st intake.Settlement) (intake.Settled, error) {
	n := g.inFlight.Add(1)
	for t := g.top.Load(); n > t && !g.top.CompareAndSwap(t, n); t = g.top.Load() {
	}
	<-g.gate
	defer g.inFlight.Add(-1)
	return g.Store.SettleMessage(ctx, now, st)
}

func TestABurstIsAcknowledgedWhileProcessingHoldsBackThenTheBacklogDrains(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	p := pressure.New(4) // Share 8 of 8 slots: one attempt at a time while high
	for range 5 {
		p.Enter() // five requests wait for their commit: ingest is under pressure
	}
	start := e.clock.Now()
	var burst []string
	for i := range 20 {
		burst = append(burst, e.receive(t, "new-secret", fmt.Sprintf(`{"id":"evt_%d","type":"paid"}`, i)))
	}
	store := &gatedSettles{Store: e.store, gate: make(chan struct{})}
	h := handoff.NewMessages(8, time.Minute)
	w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond,
		Concurrency: 8, Handoff: h, Pressure: p, HandoffWait: 2 * time.Second})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(runCtx); close(done) }()
	var open sync.Once
	release := func() { open.Do(func() { close(store.gate) }) }
	defer func() { release(); cancel(); <-done }() // a failed wait must not leave attempts blocked

	testkit.WaitFor(t, "one attempt in flight", func() bool { return store.inFlight.Load() == 1 })
	var handed []string
	for i := range 3 {
		handed = append(handed, e.handOver(t, h, fmt.Sprintf(`{"id":"evt_h%d","type":"paid"}`, i), true))
	}
	// Held back, the worker leaves the handed-over messages waiting, and
	// once they have waited HandoffWait it releases them for a claim.
	e.clock.Advance(2 * time.Second)
	for _, id := range handed {
		testkit.WaitFor(t, "handed-over message released", func() bool { return e.message(t, id).Attempt == 0 })
	}
	if top := store.top.Load(); top != 1 {
		t.Fatalf("%d attempts ran at once while ingest was under pressure; want 1 (one in eight slots)", top)
	}
	st, err := e.store.Stats(ctx, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !st.OldestDueMessage.Equal(start) {
		t.Fatalf("oldest due message = %v while held back; want the burst's receipt %v", st.OldestDueMessage, start)
	}

	for range 5 {
		p.Leave()
	}
	// Calm again: the worker fills its slots.
	testkit.WaitFor(t, "the worker resumes in full", func() bool { return store.inFlight.Load() == 8 })
	release()
	for _, id := range append(burst, handed...) {
		testkit.WaitFor(t, "backlog drained", func() bool { return e.message(t, id).State == intake.MessageProcessed })
	}
	if st, err = e.store.Stats(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if !st.OldestDueMessage.IsZero() {
		t.Fatalf("oldest due message = %v after the backlog drained; want none", st.OldestDueMessage)
	}
}

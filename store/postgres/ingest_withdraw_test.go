package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/faults"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestIngestsGivenUpOnThroughAPartitionAreLetGoWhileItLasts: through a
// partition, the ingests a committer holds and those queued behind them
// each answer unavailable at the commit wait. The queued ones are
// withdrawn, their messages let go, and the committers leave the link
// at their deadline: while the partition still holds, the queue empties
// and nothing waits on the link, where before the committers stayed on it
// and the queue kept every message (and its body) for as long as the
// partition lasted.
func TestIngestsGivenUpOnThroughAPartitionAreLetGoWhileItLasts(t *testing.T) {
	ctx := context.Background()
	db, proxy := faults.ProxiedURL(t, pgtest.Database(t))
	const wait = 300 * time.Millisecond
	// One message a batch: the two committers take one each, the rest queue.
	s := openWith(t, Options{URL: db, MaxConns: 4, CommitWait: wait, MaxBatch: 1})
	o := newOrg(t, s, "acme")
	o.ingest(t, s, `{"n":0}`)

	partition, _ := faults.Find("partition both ways")
	if err := proxy.Apply(partition); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Clear)
	const n = committers + 4 // the queue holds 4 × MaxBatch
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = s.Ingest(ctx, o.message(fmt.Sprintf(`{"n":%d}`, i+1))) })
	}
	wg.Wait()
	for i, err := range errs {
		if intake.ErrorCode(err) != intake.EUNAVAILABLE {
			t.Fatalf("ingest %d through the partition: %v, want unavailable", i, err)
		}
	}
	deadline := time.Now().Add(20 * wait) // a hang guard: the committers' deadline is one wait
	for len(s.ingest.ch) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ingests given up on still queued %v after their answer, the partition holding", len(s.ingest.ch), 20*wait)
		}
		time.Sleep(wait / 10)
	}
	// The committers are back: an ingest through the partition is taken
	// at once and answers at the wait, again; once it heals, ingests
	// commit.
	if err := s.Ingest(ctx, o.message(`{"n":"again"}`)); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("an ingest through the partition after the committers came back: %v, want unavailable", err)
	}
	proxy.Clear()
	// Each try is a new request, as a provider's retry is: a try that
	// answered unavailable may still commit (a committer had taken it
	// and its commit outlasted the wait), so the same message again
	// would meet itself.
	var next *intake.Message
	for try := 0; ; try++ {
		next = o.message(fmt.Sprintf(`{"n":"next","try":%d}`, try))
		err := s.Ingest(ctx, next)
		if err == nil {
			break
		}
		if intake.ErrorCode(err) != intake.EUNAVAILABLE {
			t.Fatalf("an ingest once the partition healed: %v, want stored or unavailable", err)
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("ingests did not commit again once the partition healed: %v", err)
		}
	}
	if _, err := s.Message(ctx, intake.Scope{}, next.ID); err != nil {
		t.Fatalf("message not stored after the partition healed: %v", err)
	}
}

// TestAWithdrawnIngestLetsGoOfItsMessage: an ingest no committer reaches
// within the commit wait is withdrawn, and the request left in the queue
// no longer holds its message (and its body), which a partition would
// otherwise keep in memory for as long as it lasts.
func TestAWithdrawnIngestLetsGoOfItsMessage(t *testing.T) {
	// A store whose committers never run: the request stays queued.
	s := &Store{ingest: newBatches[*ingestRequest](1, 4), commitWait: 10 * time.Millisecond}
	m := org{}.message(`{"n":1}`)
	if err := s.Ingest(context.Background(), m); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("an ingest no committer took: %v, want unavailable", err)
	}
	select {
	case req := <-s.ingest.ch:
		if req.state.Load() != ingestWithdrawn || req.m != nil {
			t.Fatalf("the queued request is in state %d and holds message %v; want withdrawn, holding none", req.state.Load(), req.m)
		}
		if req.take() {
			t.Fatal("a committer could take a withdrawn request")
		}
	default:
		t.Fatal("the ingest was never queued")
	}
}

package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/faults"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestIngestAnswersUnavailableWhenACommitHangsAndTheCommitGoesOn cuts the
// link to PostgreSQL without resetting it (a partition: nothing arrives,
// nothing fails): an ingest answers unavailable once the commit wait is
// past, rather than hang for as long as the partition lasts, and the
// outage watch hears of it. When the partition heals, ingests commit
// again, the provider's retry of the webhook answered unavailable among
// them.
func TestIngestAnswersUnavailableWhenACommitHangsAndTheCommitGoesOn(t *testing.T) {
	ctx := context.Background()
	db, proxy := faults.ProxiedURL(t, pgtest.Database(t))
	watch := outage.New("postgres", slog.New(slog.DiscardHandler), intake.SystemClock{})
	const wait = 300 * time.Millisecond
	s := openWith(t, Options{URL: db, MaxConns: 4, CommitWait: wait, Outage: watch})
	o := newOrg(t, s, "acme")
	if err := s.Ingest(ctx, o.message(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}

	partition, _ := faults.Find("partition both ways")
	if err := proxy.Apply(partition); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Clear) // before the store closes: its committers wait on the link
	held := o.message(`{"n":1}`)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Ingest(ctx, held) }()
	select {
	case err := <-done:
		if intake.ErrorCode(err) != intake.EUNAVAILABLE {
			t.Fatalf("an ingest through a partition returned %v after %v, want unavailable", err, time.Since(start))
		}
	case <-time.After(20 * wait):
		t.Fatalf("an ingest through a partition had not returned after %v; the commit wait is %v", 20*wait, wait)
	}
	if !watch.Down() {
		t.Error("the outage watch did not hear of the commit that did not return")
	}

	proxy.Clear()
	// Each retry is a request of its own, as a provider's is: a message
	// with an id of its own (one answered unavailable may still commit,
	// its commit going on once the link is back).
	deadline := time.Now().Add(30 * time.Second)
	retry := o.message(`{"n":1}`)
	for err := s.Ingest(ctx, retry); err != nil; err = s.Ingest(ctx, retry) {
		if time.Now().After(deadline) {
			t.Fatalf("ingests did not commit again once the partition healed: %v", err)
		}
		retry = o.message(`{"n":1}`)
	}
	next := o.message(`{"n":2}`)
	if err := s.Ingest(ctx, next); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{retry.ID, next.ID} {
		if _, err := s.Message(ctx, intake.Scope{}, id); err != nil {
			t.Errorf("message %s not stored after the partition healed: %v", id, err)
		}
	}
	// Commits go on; one at least outage.Quiet after the last failure ends
	// the outage.
	for n := 3; watch.Down(); n++ {
		if time.Now().After(deadline) {
			t.Fatal("the outage watch still holds PostgreSQL down after commits went through")
		}
		if err := s.Ingest(ctx, o.message(fmt.Sprintf(`{"n":%d}`, n))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAWaitForAPooledConnectionThatRunsOutOfTimeIsAnOutage: when every
// pooled connection hangs, a statement waits for one until its deadline
// and never reaches PostgreSQL; the outage watch hears of it all the same,
// before the caller logs its failure, so that line is held back as one of
// the outage's.
func TestAWaitForAPooledConnectionThatRunsOutOfTimeIsAnOutage(t *testing.T) {
	ctx := context.Background()
	watch := outage.New("postgres", slog.New(slog.DiscardHandler), intake.SystemClock{})
	s := openWith(t, Options{URL: pgtest.Database(t), MaxConns: 1, Outage: watch})
	busy, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.Message(short, intake.Scope{}, intake.NewID()); intake.ErrorCode(err) != intake.EUNAVAILABLE {
		t.Fatalf("a read that found no connection in time returned %v, want unavailable", err)
	}
	if !watch.Down() {
		t.Error("the outage watch did not hear of the wait for a connection that ran out of time")
	}
}

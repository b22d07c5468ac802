package postgres

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// TestStatsCountsLiveStatesExactlyAndEstimatesSettledOnesOfALargeTable
// lowers the size where Stats starts to estimate, so a small table takes
// the path a large one would.
func TestStatsCountsLiveStatesExactlyAndEstimatesSettledOnesOfALargeTable(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	now := t0
	seedMessages(t, s, 20_000, 24*time.Hour, now)
	exact, err := s.Stats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// The seed's proportions per thousand: 2 queued, 1 processing, 3 failed,
	// 5 dead, 50 ignored, 939 processed; events 2 pending, 2 retrying,
	// 5 dead, 21 no_consumer, 970 delivered, over three providers.
	want := map[intake.MessageState]int{"queued": 40, "processing": 20, "failed": 60, "dead": 100, "ignored": 1000, "processed": 18780}
	for st, n := range want {
		if exact.Messages[st] != n {
			t.Fatalf("below the threshold, %s = %d, want exactly %d (%v)", st, exact.Messages[st], n, exact.Messages)
		}
	}

	s.exactBelow = 1000
	est, err := s.Stats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []intake.MessageState{"queued", "processing", "failed", "dead"} {
		if est.Messages[st] != want[st] {
			t.Errorf("%s = %d, want exactly %d", st, est.Messages[st], want[st])
		}
	}
	for _, st := range []intake.MessageState{"processed", "ignored"} {
		if off := math.Abs(float64(est.Messages[st]-want[st])) / float64(want[st]); off > 0.2 {
			t.Errorf("%s estimated %d, %.0f%% off %d", st, est.Messages[st], 100*off, want[st])
		}
	}
	for k, n := range exact.Events {
		got := est.Events[k]
		switch k[1] {
		case "pending", "retrying", "dead", "no_consumer":
			if got != n {
				t.Errorf("events %v = %d, want exactly %d", k, got, n)
			}
		default:
			if off := math.Abs(float64(got-n)) / float64(n); off > 0.2 {
				t.Errorf("events %v estimated %d, %.0f%% off %d", k, got, 100*off, n)
			}
		}
	}
	if len(est.Events) != len(exact.Events) {
		t.Errorf("estimated events %v, counted %v", est.Events, exact.Events)
	}
}

package sweeper_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/sweeper"
)

// backlog is a store whose retention always has a full batch left: a day
// past retention at once.
type backlog struct{ bodies, messages int }

func (b *backlog) DropBodies(_ context.Context, _ time.Time, _ time.Duration, limit int) (int, error) {
	b.bodies++
	return limit, nil
}

func (b *backlog) DeleteSettled(_ context.Context, _ time.Time, _ time.Duration, limit int) (int, error) {
	b.messages++
	return limit, nil
}

func (b *backlog) DeleteExpiredSessions(context.Context, time.Time, int) (int, error) { return 0, nil }

// TestABacklogLeavesAtTheConfiguredPace: the first batch goes at once; the
// next waits for its share of PerSecond, and a wait longer than the
// context has left ends the sweep before that batch is sent.
func TestABacklogLeavesAtTheConfiguredPace(t *testing.T) {
	b := &backlog{}
	// Two rows a day: the second batch of two is a day away.
	sw := sweeper.New(sweeper.Config{Store: b, Clock: testkit.NewClock(time.Now()), Batch: 2, PerSecond: rate.Every(12 * time.Hour)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	bodies, messages, err := sw.RunOnce(ctx)
	if err == nil || bodies != 2 || messages != 0 || b.bodies != 1 || b.messages != 0 {
		t.Fatalf("swept %d bodies, %d messages in %d and %d batches (%v); want one batch of bodies, then a wait past the deadline",
			bodies, messages, b.bodies, b.messages, err)
	}
}

package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// maxClaims bounds the transactions one delivery begins when recording
// its id meets a deadlock or a busy database: each copy of an event but
// one waits and then finds the id recorded, so a few suffice.
const maxClaims = 10

// funcError is the application's function failing: its transaction is
// rolled back and the delivery answered 5xx.
type funcError struct{ err error }

func (e *funcError) Error() string { return "the function failed: " + e.err.Error() }

// claimError is a failure before the function was called (beginning the
// transaction, recording the id): another transaction may succeed.
type claimError struct{ err error }

func (e *claimError) Error() string { return e.err.Error() }
func (e *claimError) Unwrap() error { return e.err }

// apply applies e once: it reports the outcome, and whether the id was
// already recorded (the function was not called). Recording the id is
// tried again, after a short wait, when the database says another
// transaction might succeed; the function is called at most once.
func (h *Handler) apply(ctx context.Context, e Event) (Outcome, bool, error) {
	for n := 1; ; n++ {
		outcome, duplicate, err := h.applyOnce(ctx, e)
		var claim *claimError
		if err == nil || !errors.As(err, &claim) || !h.sql.transient(err) || n == maxClaims {
			return outcome, duplicate, err
		}
		wait := min(2*time.Millisecond<<n, 100*time.Millisecond)
		t := time.NewTimer(wait/2 + rand.N(wait/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, false, err
		case <-t.C:
		}
	}
}

// applyOnce is one transaction: record the id, call the function, mark an
// ignored outcome, commit.
func (h *Handler) applyOnce(ctx context.Context, e Event) (Outcome, bool, error) {
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, &claimError{fmt.Errorf("begin: %w", err)}
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, h.sql.claim, e.ID, h.now().UnixMilli())
	if err != nil {
		return 0, false, &claimError{fmt.Errorf("record the event id: %w", err)}
	}
	claimed, err := res.RowsAffected()
	if err != nil {
		return 0, false, &claimError{fmt.Errorf("record the event id: %w", err)}
	}
	if claimed == 0 {
		tx.Rollback()
		return h.recorded(ctx, e.ID), true, nil
	}
	outcome, err := h.fn(ctx, tx, e)
	if err == nil && outcome != Handled && outcome != Ignored {
		err = fmt.Errorf("returned %v, neither Handled nor Ignored", outcome)
	}
	if err != nil {
		return 0, false, &funcError{err}
	}
	if outcome == Ignored {
		if _, err := tx.ExecContext(ctx, h.sql.ignored, e.ID); err != nil {
			return 0, false, fmt.Errorf("record the outcome: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("commit: %w", err)
	}
	return outcome, false, nil
}

// recorded is the outcome recorded for an id found already there. Failing
// to read it, the delivery is still answered 2xx (handled): the id is
// recorded, so the event was applied or ignored.
func (h *Handler) recorded(ctx context.Context, id string) Outcome {
	var outcome string
	if err := h.db.QueryRowContext(ctx, h.sql.outcome, id).Scan(&outcome); err != nil && !errors.Is(err, sql.ErrNoRows) {
		h.log.Warn("inbox: read the recorded outcome of a repeated event", "event_id", id, "error", err)
	}
	if outcome == Ignored.String() {
		return Ignored
	}
	return Handled
}

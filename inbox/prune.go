package inbox

import (
	"context"
	"fmt"
	"time"
)

// MinKeep is the least Prune keeps. intake redelivers an event under the
// same id for as long as its retries last (about an hour by default; a
// consumer's own retry policy, a pause or an open breaker make it longer),
// and a record pruned before its last redelivery lets that one apply
// again. intake forgets events after its metadata retention (30 days by
// default): keeping that long is always safe.
const MinKeep = 24 * time.Hour

// Prune deletes the records of events recorded more than keep ago and
// returns how many it deleted. keep must be at least MinKeep; call it now
// and then (daily, say) with the longest time your events can wait at
// intake undelivered.
func (h *Handler) Prune(ctx context.Context, keep time.Duration) (int64, error) {
	if keep < MinKeep {
		return 0, fmt.Errorf("inbox: prune keeps at least %s (intake may redeliver an event that long), not %s", MinKeep, keep)
	}
	res, err := h.db.ExecContext(ctx, h.sql.prune, h.now().Add(-keep).UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("inbox: prune: %w", err)
	}
	return res.RowsAffected()
}

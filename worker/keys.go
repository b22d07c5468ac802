package worker

import (
	"context"

	"github.com/intakehq/intake"
)

// releaseUnopenable hands a message whose secrets this process cannot open
// back to the store, without spending one of its attempts, for a process
// that holds the right key; it is claimable again after KeyRetry, so no
// process spins on it. The error is logged once per connection, and
// every release is counted.
func (w *Worker) releaseUnopenable(ctx context.Context, c intake.Claim, reason string) {
	w.cfg.Metrics.KeyFailures.Inc()
	if _, logged := w.unopenable.LoadOrStore(c.Message.ConnectionID, true); !logged {
		w.cfg.Logger.Error("worker: this process's master key cannot open a connection's secrets; "+
			"releasing its messages for a process with the right key", "connection_id", c.Message.ConnectionID, "err", reason)
	}
	if err := w.cfg.Store.ReleaseMessage(ctx, w.cfg.Clock.Now(), w.cfg.KeyRetry, c.Message.ID, c.Attempt); err != nil {
		w.cfg.Logger.Warn("worker: release failed", "message_id", c.Message.ID, "err", err)
	}
}

package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
)

func TestReplicationLagLastSyncAndErrorsAreExported(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	m := metrics.New()
	st := metrics.Replication{Lag: 1500 * time.Millisecond, LastSync: time.Unix(1796385600, 250e6), Errors: 3}
	m.WatchReplication(func() metrics.Replication { return st })
	_, _, body := scrape(t, m.Handler(metrics.HandlerOptions{Clock: clock}), nil)
	for _, want := range []string{
		"intake_replication_lag_seconds 1.5\n",
		"intake_replication_last_sync_timestamp_seconds 1.79638560025e+09\n",
		"intake_replication_errors_total 3\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	st = metrics.Replication{}
	clock.Advance(2 * time.Second) // past the render a second old
	_, _, body = scrape(t, m.Handler(metrics.HandlerOptions{Clock: clock}), nil)
	if !strings.Contains(body, "intake_replication_last_sync_timestamp_seconds 0\n") {
		t.Errorf("no sync yet: /metrics lacks a last sync of 0:\n%s", body)
	}
}

package main

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
)

// unsetEnv clears the environment variables named, restoring them when
// the test ends, so a flag's default is what the test reads.
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}

// The bounds on consumer tests and body reads reach the control plane
// from their flags and from the environment, not only their defaults.
func TestServePassesTheConsumerTestAndBodyReadFlagsToTheControlPlane(t *testing.T) {
	unsetEnv(t, "INTAKE_CONSUMER_TESTS", "INTAKE_CONSUMER_TESTS_PER_ORG", "INTAKE_CONSUMER_TESTS_PER_SEC",
		"INTAKE_CONSUMER_TESTS_BURST", "INTAKE_BODY_READS", "INTAKE_BODY_READS_PER_ORG")
	if got := serveFlags(t).callBounds(); got != control.DefaultCallBounds {
		t.Errorf("defaults: %+v, want %+v", got, control.DefaultCallBounds)
	}
	got := serveFlags(t, "--consumer-tests", "7", "--consumer-tests-per-org", "3", "--consumer-tests-per-sec", "0.5",
		"--consumer-tests-burst", "6", "--body-reads", "9", "--body-reads-per-org", "5").callBounds()
	want := control.CallBounds{Tests: 7, TestsPerOrg: 3, TestsPerSecond: 0.5, TestsBurst: 6, BodyReads: 9, BodyReadsPerOrg: 5}
	if got != want {
		t.Errorf("from flags: %+v, want %+v", got, want)
	}
	t.Setenv("INTAKE_BODY_READS", "11")
	t.Setenv("INTAKE_BODY_READS_PER_ORG", "1")
	if got := serveFlags(t).callBounds(); got.BodyReads != 11 || got.BodyReadsPerOrg != 1 {
		t.Errorf("from the environment: body reads %d, per org %d; want 11 and 1", got.BodyReads, got.BodyReadsPerOrg)
	}
}

// The notifier's calls in flight, in all and per org, come from
// --notify-calls and --notify-calls-per-org (or the environment).
func TestServePassesTheNotifyCallFlagsToTheNotifier(t *testing.T) {
	unsetEnv(t, "INTAKE_NOTIFY_CALLS", "INTAKE_NOTIFY_CALLS_PER_ORG", "INTAKE_NOTIFY_INTERVAL")
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	notifyConfig := func(c *ServeCmd) (maxInFlight, perOrg int, interval time.Duration) {
		t.Helper()
		cfg := c.notifyConfig(nil, nil, clock, delivery.Policy{}, metrics.New(), slog.New(slog.DiscardHandler))
		if cfg.Sender == nil {
			t.Fatal("the notifier has no sender")
		}
		t.Cleanup(func() { cfg.Sender.Close() })
		return cfg.MaxInFlight, cfg.MaxInFlightPerOrg, cfg.Interval
	}
	if n, perOrg, every := notifyConfig(serveFlags(t)); n != 32 || perOrg != 4 || every != 5*time.Second {
		t.Errorf("defaults: %d in flight, %d per org, every %v; want 32, 4, 5s", n, perOrg, every)
	}
	if n, perOrg, every := notifyConfig(serveFlags(t, "--notify-calls", "9", "--notify-calls-per-org", "2", "--notify-interval", "1s")); n != 9 || perOrg != 2 || every != time.Second {
		t.Errorf("from flags: %d in flight, %d per org, every %v; want 9, 2, 1s", n, perOrg, every)
	}
	t.Setenv("INTAKE_NOTIFY_CALLS", "12")
	t.Setenv("INTAKE_NOTIFY_CALLS_PER_ORG", "3")
	if n, perOrg, _ := notifyConfig(serveFlags(t)); n != 12 || perOrg != 3 {
		t.Errorf("from the environment: %d in flight, %d per org; want 12 and 3", n, perOrg)
	}
}

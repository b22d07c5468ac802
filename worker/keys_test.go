package worker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/metrics"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/worker"
)

func TestSecretsThisProcessCannotOpenAreReleasedNeverRetriedToDeath(t *testing.T) {
	e := setup(t)
	wrongKey := testkit.Sealer(t) // not the key that sealed the connection's secrets
	var logs bytes.Buffer
	m := metrics.New()
	stray := worker.New(worker.Config{Store: e.store, Sealer: wrongKey, Clock: e.clock, KeyRetry: 10 * time.Second,
		Metrics: m, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ids := []string{
		e.receive(t, "new-secret", `{"ID":"evt_1","Type":"paid"}`),
		e.receive(t, "new-secret", `{"ID":"evt_2","Type":"paid"}`),
	}
	rounds := intake.DefaultMaxAttempts + 2
	for round := range rounds {
		if n, err := stray.RunOnce(t.Context()); err != nil || n != 2 {
			t.Fatalf("round %d: the stray worker claimed %d, %v", round, n, err)
		}
		for _, id := range ids {
			if msg := e.message(t, id); msg.State != intake.MessageProcessing || msg.Attempt != 0 {
				t.Fatalf("round %d: released message is %s at attempt %d, want processing with no attempt spent", round, msg.State, msg.Attempt)
			}
		}
		if n, _ := stray.RunOnce(t.Context()); n != 0 {
			t.Fatalf("round %d: claimed again %d at once; want it left for KeyRetry", round, n)
		}
		e.clock.Advance(10 * time.Second)
	}
	var counted dto.Metric
	if err := m.KeyFailures.Write(&counted); err != nil {
		t.Fatal(err)
	}
	if got := counted.GetCounter().GetValue(); got != float64(2*rounds) {
		t.Fatalf("key failures counted %v, want %d", got, 2*rounds)
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 1 {
		t.Fatalf("%d error lines for one connection, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "new-secret") {
		t.Fatal("the log carries a secret")
	}

	// A process with the right key takes them, as their first attempt.
	e.run(t)
	for _, id := range ids {
		if msg := e.message(t, id); msg.State != intake.MessageProcessed || msg.Attempt != 1 {
			t.Fatalf("with the right key: %s at attempt %d", msg.State, msg.Attempt)
		}
	}
}

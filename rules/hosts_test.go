package rules

import (
	"testing"
	"time"
)

// TestAHostOutlivesAScriptThatTakesItsWholeLimitLoadingAndAgainRunning
// guards the host's deadline: a call may load its script (its top level is
// timed against ScriptTimeout) and then run it (timed again), so the host
// is killed only past both limits and the grace for the round trip, never
// at one limit, which would kill a script that keeps within each.
func TestAHostOutlivesAScriptThatTakesItsWholeLimitLoadingAndAgainRunning(t *testing.T) {
	for _, limit := range []time.Duration{100 * time.Millisecond, DefaultScriptTimeout, 2 * time.Second} {
		p := newHostPool(Config{ScriptTimeout: limit}.withDefaults())
		if want := 2*limit + hostGrace; p.limit != want {
			t.Errorf("a script limit of %v kills its host at %v, want %v: a whole limit loading, another running, and %v",
				limit, p.limit, want, hostGrace)
		}
	}
}

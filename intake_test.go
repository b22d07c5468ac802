package intake_test

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// TestEveryMessageTransitionPairIsJudgedByTheTable walks every (from, to)
// pair, including undeclared states, against the design's list.
func TestEveryMessageTransitionPairIsJudgedByTheTable(t *testing.T) {
	allowed := map[[2]intake.MessageState]bool{
		{"queued", "processing"}:    true,
		{"processing", "processed"}: true,
		{"processing", "ignored"}:   true,
		{"processing", "failed"}:    true,
		{"processing", "dead"}:      true,
		{"failed", "processing"}:    true,
	}
	states := append([]intake.MessageState{"bogus", ""}, intake.MessageStates...)
	n := 0
	for _, from := range states {
		for _, to := range states {
			err := intake.CheckMessageTransition(from, to)
			if allowed[[2]intake.MessageState{from, to}] != (err == nil) {
				t.Errorf("%s → %s: err = %v", from, to, err)
			}
			if err != nil && intake.ErrorCode(err) != intake.EINVALID {
				t.Errorf("%s → %s: code %s", from, to, intake.ErrorCode(err))
			}
			n++
		}
	}
	if n != 64 {
		t.Fatalf("walked %d pairs", n)
	}
	for _, p := range [][2]intake.MessageState{{"processed", "processing"}, {"dead", "processed"}} {
		if intake.CheckMessageTransition(p[0], p[1]) == nil {
			t.Errorf("%s → %s is allowed; the design forbids it", p[0], p[1])
		}
	}
}

func TestEveryEventTransitionPairIsJudgedByTheTable(t *testing.T) {
	allowed := map[[2]intake.EventState]bool{
		{"pending", "delivered"}:    true,
		{"pending", "retrying"}:     true,
		{"pending", "no_consumer"}:  true,
		{"retrying", "retrying"}:    true,
		{"retrying", "delivered"}:   true,
		{"retrying", "dead"}:        true,
		{"retrying", "no_consumer"}: true,
		{"dead", "pending"}:         true,
		{"no_consumer", "pending"}:  true,
		{"pending", "filtered"}:     true,
		{"retrying", "filtered"}:    true,
		{"filtered", "pending"}:     true,
	}
	states := append([]intake.EventState{"failed", ""}, intake.EventStates...)
	for _, from := range states {
		for _, to := range states {
			err := intake.CheckEventTransition(from, to)
			if allowed[[2]intake.EventState{from, to}] != (err == nil) {
				t.Errorf("%s → %s: err = %v", from, to, err)
			}
		}
	}
}

// TestEveryEventPathPairIsJudgedByTheTable: a settle of routes may take
// every transition, and besides them only the table's settle steps.
func TestEveryEventPathPairIsJudgedByTheTable(t *testing.T) {
	settleOnly := map[[2]intake.EventState]bool{
		{"pending", "pending"}: true, // routes all wait
		{"pending", "dead"}:    true, // through retrying
	}
	states := append([]intake.EventState{"failed", ""}, intake.EventStates...)
	for _, from := range states {
		for _, to := range states {
			transition := intake.CheckEventTransition(from, to) == nil
			err := intake.CheckEventPath(from, to)
			if want := transition || settleOnly[[2]intake.EventState{from, to}]; want != (err == nil) {
				t.Errorf("path %s → %s: err = %v", from, to, err)
			}
			if err != nil && intake.ErrorCode(err) != intake.EINVALID {
				t.Errorf("path %s → %s: code %s", from, to, intake.ErrorCode(err))
			}
			if settleOnly[[2]intake.EventState{from, to}] && transition {
				t.Errorf("%s → %s is a transition; only a settle may take it", from, to)
			}
		}
	}
	if intake.CheckEventPath(intake.EventDelivered, intake.EventRetrying) == nil {
		t.Error("a settle took delivered → retrying")
	}
}

// TestEveryRouteTransitionPairIsJudgedByTheTable walks every (from, to)
// pair, "" (a route not yet written) and an undeclared state among them.
func TestEveryRouteTransitionPairIsJudgedByTheTable(t *testing.T) {
	allowed := map[[2]intake.RouteState]bool{
		{"", "waiting"}:         true,
		{"", "filtered"}:        true,
		{"waiting", "waiting"}:  true,
		{"waiting", "handled"}:  true,
		{"waiting", "ignored"}:  true,
		{"waiting", "filtered"}: true,
		{"waiting", "dead"}:     true,
		{"waiting", "dropped"}:  true,
	}
	states := append([]intake.RouteState{"bogus", ""}, intake.RouteStates...)
	n := 0
	for _, from := range states {
		for _, to := range states {
			err := intake.CheckRouteTransition(from, to)
			if allowed[[2]intake.RouteState{from, to}] != (err == nil) {
				t.Errorf("%q → %q: err = %v", from, to, err)
			}
			if err != nil && intake.ErrorCode(err) != intake.EINVALID {
				t.Errorf("%q → %q: code %s", from, to, intake.ErrorCode(err))
			}
			n++
		}
	}
	if n != 64 {
		t.Fatalf("walked %d pairs", n)
	}
	// A route is settled for good exactly when the table lets it go
	// nowhere.
	for _, s := range intake.RouteStates {
		if s.Done() != (s != intake.RouteWaiting) {
			t.Errorf("%s: done %v", s, s.Done())
		}
	}
}

func TestClaimableStatesComeFromTheTable(t *testing.T) {
	got := intake.MessageStatesInto(intake.MessageProcessing)
	if len(got) != 2 || got[0] != intake.MessageQueued || got[1] != intake.MessageFailed {
		t.Fatalf("states into processing = %v", got)
	}
}

func TestBackoffGrowsFourfoldWithinJitter(t *testing.T) {
	b := intake.Backoff{Base: 10 * time.Second, Jitter: 0.2}
	for n, want := range map[int]time.Duration{1: 10 * time.Second, 2: 40 * time.Second, 3: 160 * time.Second, 5: 2560 * time.Second} {
		for range 50 {
			d := b.Delay(n)
			if d < want*8/10 || d > want*12/10 {
				t.Fatalf("attempt %d delay %v, want %v ±20%%", n, d, want)
			}
		}
	}
	exact := intake.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}
	if d := exact.Delay(6); d != 10*time.Millisecond {
		t.Fatalf("capped delay = %v", d)
	}
}

func TestIdentityPrefersProviderIDThenDigestAndNeverForChangeNotices(t *testing.T) {
	m := &intake.Message{ID: "m", EndpointID: "ep", Digest: "abc", ReceivedAt: time.Unix(0, 0)}
	id, ok := intake.IdentityFor(m, "evt_1", "stripe.x", intake.KindEvent)
	if !ok || id.Key != "id:evt_1" || !id.ExpiresAt.IsZero() {
		t.Fatalf("with id = %+v", id)
	}
	id, ok = intake.IdentityFor(m, "", "none.message", intake.KindEvent)
	if !ok || id.Key != "digest:ep:abc" || !id.ExpiresAt.Equal(time.Unix(0, 0).Add(24*time.Hour)) {
		t.Fatalf("digest = %+v", id)
	}
	if _, ok := intake.IdentityFor(m, "", "google.sync", intake.KindChangeNotice); ok {
		t.Fatal("change notice without id deduplicated")
	}
	if v := intake.Judge(nil, id); v != "" {
		t.Fatalf("no prior = %q", v)
	}
	if v := intake.Judge(&intake.Identity{Digest: "abc", EventType: "none.message"}, id); v != intake.OutcomeDuplicate {
		t.Fatalf("same = %q", v)
	}
	if v := intake.Judge(&intake.Identity{Digest: "xyz", EventType: "none.message"}, id); v != intake.OutcomeConflict {
		t.Fatalf("other digest = %q", v)
	}
}

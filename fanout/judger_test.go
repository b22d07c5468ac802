package fanout_test

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/fanout"
	"github.com/intakehq/intake/internal/changes"
	"github.com/intakehq/intake/internal/testkit"
)

// consumersOnly is a store with an org's consumers and nothing else.
type consumersOnly struct {
	consumers []intake.Consumer
	changes   changes.Counter
}

func (s *consumersOnly) ListConsumers(context.Context, intake.Scope) ([]intake.Consumer, error) {
	return s.consumers, nil
}

func (s *consumersOnly) MessageRequests(context.Context, []string) (map[string]intake.OriginalRequest, error) {
	return nil, nil
}

func (s *consumersOnly) Connection(context.Context, intake.Scope, string) (intake.Connection, error) {
	return intake.Connection{}, intake.Errorf(intake.ENOTFOUND, "no connection")
}

func (s *consumersOnly) Changes() intake.Versioned { return &s.changes }

// TestTheSlotsJudgeHoldsAreGivenBackButForTheCallsTheSettleLeased: a
// settle's fan-out holds a call slot for each route to an unpaced consumer
// (a paced one's route is written unleased); once it settles, the slots of
// the routes it did not lease come free at once, a failed settle's all of
// them, and a leased call's when it is released after the call.
func TestTheSlotsJudgeHoldsAreGivenBackButForTheCallsTheSettleLeased(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	consumer := func(id string, c intake.Controls) intake.Consumer {
		return intake.Consumer{ID: id, OrgID: "org", Enabled: true, EventTypes: []string{"*"}, Controls: c}
	}
	store := &consumersOnly{consumers: []intake.Consumer{consumer("a", intake.Controls{}), consumer("b", intake.Controls{}),
		consumer("paced", intake.Controls{RatePerSec: 1})}}
	j := fanout.New(fanout.Config{Store: store, Clock: clock, MaxEvents: 10})
	freed := make(chan struct{}, 1)
	j.Wake(freed)
	m := &intake.Message{ID: "m1", OrgID: "org", ConnectionID: "conn"}
	ev := intake.Event{ID: "e1", OrgID: "org", MessageID: "m1", ConnectionID: "conn", Type: "paid"}

	judged := j.Judge(context.Background(), m, []intake.Event{ev}, nil)
	f, ok := judged.FanOuts["e1"]
	if !ok || len(f.Routes) != 3 {
		t.Fatalf("fan-out %+v, want three routes", judged.FanOuts)
	}
	for _, r := range f.Routes {
		if r.Unleased != (r.ConsumerID == "paced") {
			t.Errorf("route to %s unleased: %v", r.ConsumerID, r.Unleased)
		}
	}
	if n := j.Free(); n != 8 {
		t.Fatalf("%d slots free while the fan-out is judged, want 8", n)
	}
	ev.State = intake.EventPending
	call := intake.RouteClaim{Event: ev, ConsumerID: "a", Attempt: 1}
	j.Settled(judged, intake.Settled{Events: []intake.Event{ev}, Calls: []intake.RouteClaim{call}})
	if n := j.Free(); n != 9 {
		t.Fatalf("%d slots free once the settle leased one call, want 9", n)
	}
	select {
	case <-freed:
	default:
		t.Error("the slot given back woke no one")
	}
	j.Release("org", "a", 1) // the call was made
	if n := j.Free(); n != 10 {
		t.Fatalf("%d slots free after the call, want 10", n)
	}

	judged = j.Judge(context.Background(), m, []intake.Event{ev}, nil)
	j.Settled(judged, intake.Settled{}) // the settle failed
	if n := j.Free(); n != 10 {
		t.Fatalf("%d slots free after a failed settle, want 10", n)
	}
}

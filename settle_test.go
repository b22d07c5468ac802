package intake

import (
	"testing"
	"time"
)

const (
	conn = "conn-1"
	org  = "org-1"
)

func processing(attempt int) SettlingMessage {
	return SettlingMessage{ConnectionID: conn, OrgID: org, EndpointID: "ep-1", State: MessageProcessing, Attempt: attempt}
}

func processed(id string, events ...Event) TimedSettlement {
	return TimedSettlement{Now: t0, Settlement: Settlement{MessageID: id, Attempt: 1, To: MessageProcessed, Outcome: OutcomeEvents, Events: events}}
}

func withIdentity(s TimedSettlement, key, digest string) TimedSettlement {
	s.Identity = &Identity{Key: key, Digest: digest, EventType: "t", MessageID: s.MessageID}
	return s
}

func withFanOut(s TimedSettlement, f FanOut) TimedSettlement {
	if s.FanOuts == nil {
		s.FanOuts = map[string]FanOut{}
	}
	s.FanOuts[f.EventID] = f
	return s
}

func newEvent(id, providerID string) Event {
	return Event{ID: id, OrgID: org, ConnectionID: conn, MessageID: "m-" + id, Type: "t", ProviderEventID: providerID,
		State: EventPending, MaxAttempts: DefaultMaxAttempts, NextAttemptAt: t0, CreatedAt: t0, ReceivedAt: t0}
}

func TestDecideSettlements(t *testing.T) {
	unpaced := ConsumerLane{Enabled: true}
	paced := ConsumerLane{Enabled: true, Controls: Controls{RatePerSec: 5}}
	tripped := ConsumerLane{Enabled: true, Lane: Lane{Tripped: true}}
	cases := []struct {
		name  string
		read  SettleRead
		batch []TimedSettlement
		check func(t *testing.T, d SettleDecision)
	}{{
		name:  "a stale attempt is refused and writes nothing",
		read:  SettleRead{Messages: map[string]SettlingMessage{"m1": processing(2)}},
		batch: []TimedSettlement{processed("m1", newEvent("e1", ""))},
		check: func(t *testing.T, d SettleDecision) {
			wantCode(t, d.Results[0].Err, ESTALE)
			wantNothingWritten(t, d)
		},
	}, {
		name:  "a message that is not there is not found",
		read:  SettleRead{},
		batch: []TimedSettlement{processed("m1")},
		check: func(t *testing.T, d SettleDecision) {
			wantCode(t, d.Results[0].Err, ENOTFOUND)
			wantNothingWritten(t, d)
		},
	}, {
		name: "a live identity makes the message a duplicate, with no events",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Identities: map[ConnKey]Identity{{conn, "id:x"}: {Key: "id:x", Digest: "d", EventType: "t"}}},
		batch: []TimedSettlement{withIdentity(processed("m1", newEvent("e1", "x")), "id:x", "d")},
		check: func(t *testing.T, d SettleDecision) {
			r := d.Results[0]
			if r.Err != nil || r.Settled.State != MessageIgnored || r.Settled.Outcome != OutcomeDuplicate || len(d.Events) != 0 || len(d.Identities) != 0 {
				t.Fatalf("got %+v, %d events, %d identities", r, len(d.Events), len(d.Identities))
			}
		},
	}, {
		name: "the same key with other content is a conflict",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Identities: map[ConnKey]Identity{{conn, "id:x"}: {Key: "id:x", Digest: "other", EventType: "t"}}},
		batch: []TimedSettlement{withIdentity(processed("m1"), "id:x", "d")},
		check: func(t *testing.T, d SettleDecision) {
			if d.Results[0].Settled.Outcome != OutcomeConflict {
				t.Fatalf("outcome %q, want conflict", d.Results[0].Settled.Outcome)
			}
		},
	}, {
		name: "an expired identity is replaced",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Identities: map[ConnKey]Identity{{conn, "digest:x"}: {Key: "digest:x", Digest: "d", EventType: "t", ExpiresAt: t0}}},
		batch: []TimedSettlement{withIdentity(processed("m1", newEvent("e1", "")), "digest:x", "d")},
		check: func(t *testing.T, d SettleDecision) {
			if d.Results[0].Settled.State != MessageProcessed || len(d.Identities) != 1 || len(d.Events) != 1 {
				t.Fatalf("got %+v", d)
			}
		},
	}, {
		name: "two results with one key in a batch: the second is the duplicate of the first",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1), "m2": processing(1)}},
		batch: []TimedSettlement{withIdentity(processed("m1", newEvent("e1", "x")), "id:x", "d"),
			withIdentity(processed("m2", newEvent("e2", "x")), "id:x", "d")},
		check: func(t *testing.T, d SettleDecision) {
			if d.Results[0].Settled.State != MessageProcessed || d.Results[1].Settled.Outcome != OutcomeDuplicate {
				t.Fatalf("results %+v", d.Results)
			}
			if len(d.Events) != 1 || d.Events[0].ID != "e1" || len(d.Identities) != 1 || len(d.Moves) != 2 {
				t.Fatalf("events %v identities %v moves %d", d.Events, d.Identities, len(d.Moves))
			}
		},
	}, {
		name:  "one message settled twice in a batch: the second is stale",
		read:  SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)}},
		batch: []TimedSettlement{processed("m1"), processed("m1")},
		check: func(t *testing.T, d SettleDecision) {
			wantCode(t, d.Results[1].Err, ESTALE)
			if d.Results[0].Err != nil || len(d.Moves) != 1 {
				t.Fatalf("results %+v, %d moves", d.Results, len(d.Moves))
			}
		},
	}, {
		name: "an event judged is created fanned out: unpaced consumers leased, paced ones left to a claim",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Consumers: map[string]ConsumerLane{"c1": unpaced, "c2": paced, "c3": tripped}},
		batch: []TimedSettlement{withFanOut(processed("m1", newEvent("e1", "")), FanOut{EventID: "e1", Lease: time.Minute,
			Routes: []FanOutRoute{{ConsumerID: "c1"}, {ConsumerID: "c2"}, {ConsumerID: "c3"}, {ConsumerID: "c4", Unleased: true}, {ConsumerID: "gone"}}})},
		check: func(t *testing.T, d SettleDecision) {
			out := d.Results[0].Settled
			if len(out.Calls) != 1 || out.Calls[0].ConsumerID != "c1" || !out.Calls[0].LeaseUntil.Equal(t0.Add(time.Minute)) {
				t.Fatalf("calls %+v, want c1's alone", out.Calls)
			}
			if e := out.Calls[0].Event; e.ID != "e1" || e.AwaitsFanOut() || e.Attempt != 1 {
				t.Fatalf("call's event %+v", e)
			}
			if len(d.Routes) != 5 || !d.WakeRoutes || d.WakeEvents {
				t.Fatalf("%d routes, wake routes %v, wake events %v", len(d.Routes), d.WakeRoutes, d.WakeEvents)
			}
			if d.Events[0].State != EventPending || !d.Events[0].NextAttemptAt.IsZero() {
				t.Fatalf("event %+v, want pending off the event queue", d.Events[0])
			}
		},
	}, {
		name: "an event every consumer filtered is created filtered, with the records",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)}, Consumers: map[string]ConsumerLane{"c1": unpaced}},
		batch: []TimedSettlement{withFanOut(processed("m1", newEvent("e1", "")), FanOut{EventID: "e1", Lease: time.Minute,
			Routes: []FanOutRoute{{ConsumerID: "c1", Filtered: true, Delivery: &Delivery{ID: "d1", Outcome: DeliveryFiltered}}}})},
		check: func(t *testing.T, d SettleDecision) {
			if d.Events[0].State != EventFiltered || len(d.Deliveries) != 1 || d.Routes[0].State != RouteFiltered || len(d.Results[0].Settled.Calls) != 0 {
				t.Fatalf("event %s, deliveries %v, routes %+v", d.Events[0].State, d.Deliveries, d.Routes)
			}
		},
	}, {
		name:  "an event no consumer selected is created no_consumer",
		read:  SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)}},
		batch: []TimedSettlement{withFanOut(processed("m1", newEvent("e1", "")), FanOut{EventID: "e1"})},
		check: func(t *testing.T, d SettleDecision) {
			if d.Events[0].State != EventNoConsumer || d.WakeEvents {
				t.Fatalf("event %+v", d.Events[0])
			}
		},
	}, {
		name: "an event the settle finds a subject for waits for a router's claim",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Subjects: map[ConnKey]Subject{{conn, "obj-2"}: {App: "crm", RecordID: "r2"}}, Consumers: map[string]ConsumerLane{"c1": unpaced}},
		batch: []TimedSettlement{withFanOut(processed("m1", func() Event { e := newEvent("e1", ""); e.ObjectIDs = []string{"obj-1", "obj-2"}; return e }()),
			FanOut{EventID: "e1", Lease: time.Minute, Routes: []FanOutRoute{{ConsumerID: "c1"}}})},
		check: func(t *testing.T, d SettleDecision) {
			e := d.Events[0]
			if e.Subject == nil || e.Subject.RecordID != "r2" || !e.AwaitsFanOut() || len(d.Routes) != 0 || !d.WakeEvents {
				t.Fatalf("event %+v, %d routes, wake events %v", e, len(d.Routes), d.WakeEvents)
			}
		},
	}, {
		name: "a replay names its original; a repeat of a provider event is not created",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)},
			Originals: map[ConnKey]string{{conn, "p1"}: "orig-1"}},
		batch: []TimedSettlement{processed("m1",
			func() Event { e := newEvent("e1", "p1"); e.Replay = true; return e }(),
			newEvent("e2", "p1"), newEvent("e3", "p3"), newEvent("e4", "p3"))},
		check: func(t *testing.T, d SettleDecision) {
			if len(d.Events) != 2 || d.Events[0].ReplayOf != "orig-1" || d.Events[1].ID != "e3" {
				t.Fatalf("events %+v", d.Events)
			}
		},
	}, {
		name: "a dead message and one ignored for its signature leave notices about their endpoint",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1), "m2": processing(1)}},
		batch: []TimedSettlement{
			{Now: t0, Settlement: Settlement{MessageID: "m1", Attempt: 1, To: MessageDead, ErrorCode: ErrCodePermanent, ErrorMessage: "bad"}},
			{Now: t0, Settlement: Settlement{MessageID: "m2", Attempt: 1, To: MessageIgnored, Outcome: OutcomeSignature, ErrorMessage: "signature: no match"}}},
		check: func(t *testing.T, d SettleDecision) {
			if ns := otherNotices(d.Notices); len(ns) != 2 || ns[0].Topic != NoticeMessageDead || ns[1].Topic != NoticeSignatureFailures || ns[0].Subject != "ep-1" {
				t.Fatalf("notices %+v", d.Notices)
			}
			if d.Moves[0].SettledAt.IsZero() || d.Moves[0].Attempt.State != MessageDead {
				t.Fatalf("move %+v", d.Moves[0])
			}
		},
	}, {
		name: "a failed attempt moves the message without settling it",
		read: SettleRead{Messages: map[string]SettlingMessage{"m1": processing(1)}},
		batch: []TimedSettlement{{Now: t0, Settlement: Settlement{MessageID: "m1", Attempt: 1, To: MessageFailed, ErrorCode: ErrCodeTransient,
			NextAttemptAt: t0.Add(time.Minute)}}},
		check: func(t *testing.T, d SettleDecision) {
			if len(d.Moves) != 1 || !d.Moves[0].SettledAt.IsZero() || len(d.Notices) != 0 {
				t.Fatalf("moves %+v notices %v", d.Moves, d.Notices)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, DecideSettlements(c.read, c.batch)) })
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if ErrorCode(err) != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func wantNothingWritten(t *testing.T, d SettleDecision) {
	t.Helper()
	if len(d.Identities)+len(d.Events)+len(d.Routes)+len(d.Deliveries)+len(d.Moves)+len(d.Notices) != 0 {
		t.Fatalf("a refused result wrote %+v", d)
	}
}

func TestKeysOfListsEachKeyOnce(t *testing.T) {
	e := newEvent("e1", "p1")
	e.ObjectIDs = []string{"o1", "o1"}
	s := withFanOut(withIdentity(processed("m1", e, e), "id:p1", "d"), FanOut{EventID: "e1", Routes: []FanOutRoute{{ConsumerID: "c1"}, {ConsumerID: "c1"}}})
	k := KeysOf([]TimedSettlement{s})
	if k.Identities["m1"] != "id:p1" || len(k.Subjects) != 1 || len(k.Originals) != 1 || len(k.Consumers) != 1 {
		t.Fatalf("keys %+v", k)
	}
}

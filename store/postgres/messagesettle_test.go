package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// TestMessageSettlesTakenTogetherShareATransactionAndFailAlone hands the
// settler one batch as it takes what waits: a webhook and its resend, a
// stale result, the same message settled twice, an event fanned out with
// a call leased, one left for the router, and one whose provider id an
// earlier event holds. Each settles as it would alone, the stale ones fail
// alone, and the batch costs the statements of one settle.
func TestMessageSettlesTakenTogetherShareATransactionAndFailAlone(t *testing.T) {
	ctx := context.Background()
	s, rt := openCounted(t)
	o := newOrg(t, s, "acme")
	c := o.consumer(t, s, intake.Controls{})
	var ms []*intake.Message
	for _, body := range []string{`{"id":"evt_a"}`, `{"id":"evt_a"}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`} {
		ms = append(ms, o.ingest(t, s, body))
	}
	claims, err := s.ClaimMessages(ctx, t0, time.Minute, 10)
	if err != nil || len(claims) != len(ms) {
		t.Fatalf("claims %d %v", len(claims), err)
	}
	attempt := map[string]int{}
	for _, cl := range claims {
		attempt[cl.Message.ID] = cl.Attempt
	}
	req := func(m *intake.Message, attempt int, ident string, planned bool, events ...intake.Event) messageSettleRequest {
		st := intake.Settlement{MessageID: m.ID, Attempt: attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents, Events: events}
		if ident != "" {
			id, _ := intake.IdentityFor(m, ident, "stripe.invoice.paid", intake.KindEvent)
			st.Identity = &id
		}
		if planned {
			st.FanOuts = map[string]intake.FanOut{}
			for _, e := range events {
				st.FanOuts[e.ID] = intake.FanOut{Routes: []intake.FanOutRoute{{ConsumerID: c.ID}}, Lease: time.Minute}
			}
		}
		return messageSettleRequest{now: t0, st: st, done: make(chan messageSettled, 1)}
	}

	before := rt.statements.Load()
	first := []messageSettleRequest{req(ms[5], attempt[ms[5].ID], "evt_x", true, o.event(ms[5], "evt_x"))}
	s.settleMessages(first)
	if r := <-first[0].done; r.err != nil || len(r.out.Events) != 1 {
		t.Fatalf("a settle alone: %+v", r)
	}
	single := rt.statements.Load() - before

	e0, e1, e3 := o.event(ms[0], "evt_a"), o.event(ms[1], "evt_a"), o.event(ms[3], "evt_3")
	batch := []messageSettleRequest{
		req(ms[0], attempt[ms[0].ID], "evt_a", true, e0),
		req(ms[1], attempt[ms[1].ID], "evt_a", true, e1),                    // its resend
		req(ms[2], attempt[ms[2].ID]+1, "", false, o.event(ms[2], "evt_2")), // not the current attempt
		req(ms[3], attempt[ms[3].ID], "", false, e3),
		req(ms[3], attempt[ms[3].ID], "", false, o.event(ms[3], "evt_3b")), // settled just before, in the batch
		req(ms[4], attempt[ms[4].ID], "", false, o.event(ms[4], "evt_x")),  // an earlier event holds its provider id
	}
	before = rt.statements.Load()
	s.settleMessages(batch)
	together := rt.statements.Load() - before
	outs := make([]messageSettled, len(batch))
	for i, r := range batch {
		outs[i] = <-r.done
	}
	for _, i := range []int{2, 4} {
		if intake.ErrorCode(outs[i].err) != intake.ESTALE {
			t.Errorf("result %d settled: %+v", i, outs[i])
		}
	}
	for _, i := range []int{0, 1, 3, 5} {
		if outs[i].err != nil {
			t.Fatalf("result %d: %v", i, outs[i].err)
		}
	}
	if o := outs[0].out; o.State != intake.MessageProcessed || len(o.Events) != 1 || len(o.Calls) != 1 ||
		o.Calls[0].ConsumerID != c.ID || !o.Calls[0].LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Errorf("the webhook: %+v", o)
	}
	if o := outs[1].out; o.State != intake.MessageIgnored || o.Outcome != intake.OutcomeDuplicate || len(o.Events) != 0 {
		t.Errorf("its resend, judged against the identity the webhook recorded in the batch: %+v", o)
	}
	if o := outs[3].out; o.State != intake.MessageProcessed || len(o.Events) != 1 || len(o.Calls) != 0 {
		t.Errorf("the unplanned event: %+v", o)
	}
	if o := outs[5].out; o.State != intake.MessageProcessed || len(o.Events) != 0 {
		t.Errorf("the event whose provider id was held: %+v", o)
	}

	state := func(q string, args ...any) string { return s.scalar(t, q, args...) }
	for i, want := range []string{"processed 1", "ignored 1", "processing 0", "processed 1", "processed 1"} {
		got := state(`SELECT m.state || ' ' || (SELECT count(*) FROM message_attempts a WHERE a.message_id = m.id) FROM messages m WHERE m.id = $1`, ms[i].ID)
		if got != want {
			t.Errorf("message %d (state, attempts recorded): %q, want %q", i, got, want)
		}
	}
	if got := state(`SELECT string_agg(e.state || ' ' || (SELECT count(*) FROM routes r WHERE r.event_id = e.id AND r.lease_until IS NOT NULL), ', ' ORDER BY e.provider_event_id)
		FROM events e WHERE e.message_id = ANY($1::uuid[])`, []string{ms[0].ID, ms[1].ID, ms[3].ID}); got != "pending 0, pending 1" {
		t.Errorf("the events created (state, routes leased), evt_3 then evt_a: %q", got)
	}
	t.Logf("statements: one settle alone %d, six together %d", single, together)
	if together > single+2 {
		t.Errorf("six settles together took %d statements; one alone takes %d", together, single)
	}
}

// TestAMessageSettleThatFailsItsBatchFailsAlone gives a batch a result
// whose event PostgreSQL refuses (data that is not JSON): the batch's
// transaction fails, each result is settled alone, and only that one fails.
func TestAMessageSettleThatFailsItsBatchFailsAlone(t *testing.T) {
	ctx := context.Background()
	s, _ := openCounted(t)
	o := newOrg(t, s, "acme")
	var ms []*intake.Message
	for _, body := range []string{`{"n":0}`, `{"n":1}`, `{"n":2}`} {
		ms = append(ms, o.ingest(t, s, body))
	}
	claims, err := s.ClaimMessages(ctx, t0, time.Minute, 10)
	if err != nil || len(claims) != len(ms) {
		t.Fatalf("claims %d %v", len(claims), err)
	}
	var batch []messageSettleRequest
	for i, c := range claims {
		e := o.event(&c.Message, "evt_"+c.Message.ID)
		if c.Message.ID == ms[1].ID {
			e.Data = []byte(`{not json`)
		}
		batch = append(batch, messageSettleRequest{now: t0, done: make(chan messageSettled, 1), st: intake.Settlement{
			MessageID: c.Message.ID, Attempt: claims[i].Attempt, To: intake.MessageProcessed, Outcome: intake.OutcomeEvents,
			Events: []intake.Event{e}}})
	}
	s.settleMessages(batch)
	for _, r := range batch {
		out := <-r.done
		if (out.err != nil) != (r.st.MessageID == ms[1].ID) {
			t.Errorf("message %s: %v; want only the one whose event is not JSON to fail", r.st.MessageID, out.err)
		}
	}
	for i, want := range []string{"processed 1", "processing 0", "processed 1"} {
		got := s.scalar(t, `SELECT m.state || ' ' || (SELECT count(*) FROM events e WHERE e.message_id = m.id) FROM messages m WHERE m.id = $1`, ms[i].ID)
		if got != want {
			t.Errorf("message %d (state, events): %q, want %q", i, got, want)
		}
	}
}

package worker_test

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

func TestARetiredSecretStopsVerifyingOnTheNextMessage(t *testing.T) {
	e := setup(t)
	first := e.receive(t, "old-secret", `{"ID":"evt_1","Type":"paid"}`)
	e.run(t)
	if m := e.message(t, first); m.State != intake.MessageProcessed {
		t.Fatalf("before the rotation: %s %s", m.State, m.Outcome)
	}
	sealed, _ := e.sealer.SealSecrets([]string{"new-secret"}, []byte(e.conn.ID))
	if err := e.store.ReplaceConnectionSecrets(context.Background(), intake.Scope{}, e.conn.ID, sealed); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the connection row is still inside its TTL.
	old := e.receive(t, "old-secret", `{"ID":"evt_2","Type":"paid"}`)
	fresh := e.receive(t, "new-secret", `{"ID":"evt_3","Type":"paid"}`)
	e.run(t)
	if m := e.message(t, old); m.State != intake.MessageIgnored || m.Outcome != intake.OutcomeSignature {
		t.Fatalf("signed with the retired secret: %s %s", m.State, m.Outcome)
	}
	if m := e.message(t, fresh); m.State != intake.MessageProcessed {
		t.Fatalf("signed with the new secret: %s %s", m.State, m.Outcome)
	}
}

func TestAConnectionFilterSavedTakesEffectOnTheNextMessage(t *testing.T) {
	e := setup(t)
	before := e.receive(t, "new-secret", `{"id":"evt_1","type":"paid","amount":5}`)
	e.run(t)
	if m := e.message(t, before); m.Outcome != intake.OutcomeEvents {
		t.Fatalf("before the filter: %s %s", m.State, m.Outcome)
	}
	e.conn.Filter = `event.data.amount >= 100`
	if err := e.store.UpdateConnection(context.Background(), intake.Scope{}, e.conn); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the connection row is still inside its TTL.
	after := e.receive(t, "new-secret", `{"id":"evt_2","type":"paid","amount":5}`)
	e.run(t)
	if m := e.message(t, after); m.State != intake.MessageProcessed || m.Outcome != intake.OutcomeFiltered {
		t.Fatalf("right after the filter was saved: %s %s", m.State, m.Outcome)
	}
}

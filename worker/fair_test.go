package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
	"github.com/intakehq/intake/worker"
)

// permittedSettles lets each settle through only on a permit, and tells
// the org of each settle as it arrives.
type permittedSettles struct {
	*sqlite.Store
	permits chan struct{}
	arrived chan string // org ids
}

func (p *permittedSettles) SettleMessage(ctx context.Context, now time.Time, st intake.Settlement) (intake.Settled, error) {
	m, err := p.Store.Message(ctx, intake.Scope{}, st.MessageID)
	if err != nil {
		return intake.Settled{}, err
	}
	p.arrived <- m.OrgID
	<-p.permits
	return p.Store.SettleMessage(ctx, now, st)
}

// otherOrg makes a second org with a connection and an endpoint like e's.
func (e *env) otherOrg(t *testing.T) (intake.Connection, intake.Endpoint) {
	t.Helper()
	ctx := context.Background()
	org := intake.Org{ID: intake.NewID(), Name: "beta", CreatedAt: e.clock.Now()}
	c := e.conn
	c.ID, c.OrgID = intake.NewID(), org.ID
	c.SealedSecrets, _ = e.sealer.SealSecrets([]string{"new-secret"}, []byte(c.ID))
	ep := intake.Endpoint{ID: intake.NewID(), OrgID: org.ID, ConnectionID: c.ID, TokenHash: []byte(c.ID),
		Enabled: true, MaxBodyBytes: 1 << 20, CreatedAt: e.clock.Now()}
	for _, err := range []error{e.store.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_beta", Hash: []byte(org.ID)}),
		e.store.CreateConnection(ctx, c), e.store.CreateEndpoint(ctx, ep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, ep
}

// TestOneOrgsBacklogDoesNotWaitInFrontOfAnotherOrgsMessage: every slot is
// busy with org B's attempts and B has a backlog received earlier; org A's
// message is still claimed while B's attempts run, and it is the first
// started when a slot frees, ahead of B's backlog.
func TestOneOrgsBacklogDoesNotWaitInFrontOfAnotherOrgsMessage(t *testing.T) {
	e := setup(t)
	bConn, bEp := e.otherOrg(t)
	var backlog []string
	for i := range 12 {
		backlog = append(backlog, e.receiveAt(t, bConn, bEp, fmt.Sprintf(`{"id":"evt_b%d","type":"paid"}`, i)))
	}
	e.clock.Advance(time.Second)
	mine := e.receive(t, "new-secret", `{"id":"evt_a","type":"paid"}`)
	store := &permittedSettles{Store: e.store, permits: make(chan struct{}), arrived: make(chan string, 100)}
	w := worker.New(worker.Config{Store: store, Sealer: e.sealer, Clock: e.clock, Poll: 5 * time.Millisecond, Concurrency: 2, Batch: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { close(store.permits); cancel(); <-done }()

	for range 2 {
		if org := <-store.arrived; org != bConn.OrgID {
			t.Fatalf("the first attempts were org %s's; want the backlog's", org)
		}
	}
	testkit.WaitFor(t, "A's message claimed while B's attempts hold every slot", func() bool {
		return e.message(t, mine).State == intake.MessageProcessing
	})
	store.permits <- struct{}{} // one of B's attempts settles; its slot frees
	if org := <-store.arrived; org != e.conn.OrgID {
		t.Fatalf("the next attempt started was org %s's; want A's, ahead of B's backlog of %d", org, len(backlog)-2)
	}
}

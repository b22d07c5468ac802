package router_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/intakehq/intake"
)

// TestAConsumerThatAnswers410GoneIsDisabledAtOnceAndAudited: the attempt
// that gets 410 disables the consumer in its own settlement, with an
// audit entry; the event is not retried for it, and no later event is
// sent to it.
func TestAConsumerThatAnswers410GoneIsDisabledAtOnceAndAudited(t *testing.T) {
	e := setup(t)
	gone, goneURL := newRecorder(t, http.StatusGone)
	ok, okURL := newRecorder(t, 200)
	g, _ := e.consumer(t, "old-app", goneURL, false, "stripe.*")
	e.consumer(t, "billing", okURL, false, "stripe.*")
	first := e.event(t, "stripe.invoice.paid")
	e.run(t)
	ev, ds := e.get(t, first)
	if ev.State != intake.EventDelivered || gone.calls() != 1 || ok.calls() != 1 {
		t.Fatalf("event %s, calls %d/%d: the other consumer's handling delivers it, the gone one is not retried", ev.State, gone.calls(), ok.calls())
	}
	var recorded bool
	for _, d := range ds {
		recorded = recorded || (d.ConsumerID == g.ID && d.StatusCode == http.StatusGone && d.Error != "")
	}
	if !recorded {
		t.Fatalf("deliveries %+v: the 410 is not recorded", ds)
	}
	got, err := e.store.Consumer(context.Background(), intake.Scope{}, g.ID)
	if err != nil || got.Enabled {
		t.Fatalf("consumer after 410: enabled %v, %v", got.Enabled, err)
	}
	page, _ := e.store.ListAudit(context.Background(), intake.Scope{OrgID: e.org.ID}, intake.AuditFilter{})
	if len(page.Items) != 1 || page.Items[0].Action != "consumer.disable" || page.Items[0].TargetID != g.ID || page.Items[0].Actor != "intake" {
		t.Fatalf("audit = %+v", page.Items)
	}
	e.event(t, "stripe.invoice.paid")
	e.run(t)
	if gone.calls() != 1 || ok.calls() != 2 {
		t.Fatalf("after the 410 the disabled consumer got %d calls", gone.calls())
	}
}

func TestAnEventWhoseOnlyConsumerIsGoneHasNoConsumer(t *testing.T) {
	e := setup(t)
	_, url := newRecorder(t, http.StatusGone)
	e.consumer(t, "old-app", url, false, "stripe.*")
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	if ev, _ := e.get(t, id); ev.State != intake.EventNoConsumer {
		t.Fatalf("event %s, want no_consumer", ev.State)
	}
}

package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
)

// consumerWith is a consumer of every event with controls ctl, answering
// status until told otherwise.
func (e *env) consumerWith(t *testing.T, status int, ctl intake.Controls) (*consumer, intake.Consumer) {
	t.Helper()
	c := e.consumer(t, "github.*")
	c.status = status
	cs, err := e.store.ListConsumers(context.Background(), intake.Scope{})
	if err != nil || len(cs) == 0 {
		t.Fatalf("consumers %v %v", cs, err)
	}
	cons := cs[len(cs)-1]
	cons.Controls = ctl
	if err := e.store.UpdateConsumer(context.Background(), intake.Scope{}, cons); err != nil {
		t.Fatal(err)
	}
	return c, cons
}

func (c *consumer) answer(status int) {
	c.mu.Lock()
	c.status = status
	c.mu.Unlock()
}

func events(t *testing.T, e *env, f intake.EventFilter) []intake.Event {
	t.Helper()
	page, err := e.store.ListEvents(context.Background(), intake.Scope{}, f)
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

func TestRetryNowDeliversAWaitingEventWithoutItsBackoff(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	app, cons := e.consumerWith(t, 500, intake.Controls{Retry: intake.RetryPolicy{Attempts: 5, Base: time.Hour}})
	e.receive(t, "d-1")
	e.settle(t)
	retrying := events(t, e, intake.EventFilter{State: intake.EventRetrying})
	if len(retrying) != 1 || len(app.envelopes()) != 1 {
		t.Fatalf("%d retrying events after %d calls", len(retrying), len(app.envelopes()))
	}
	ev := retrying[0]
	app.answer(200)
	e.clock.Advance(time.Minute)
	e.settle(t)
	if n := len(app.envelopes()); n != 1 {
		t.Fatalf("called %d times within the hour's backoff", n)
	}
	operator := control.Caller{Scope: intake.Scope{OrgID: e.org.ID}, Actor: "test", Role: intake.RoleOperator}
	viewer := control.Caller{Scope: intake.Scope{OrgID: e.org.ID}, Actor: "test", Role: intake.RoleViewer}
	stranger := control.Caller{Scope: intake.Scope{OrgID: intake.NewID()}, Actor: "test", Role: intake.RoleAdmin}

	if _, err := e.ctl.Retry(ctx, viewer, intake.RetrySelection{EventID: ev.ID}, false); intake.ErrorCode(err) != intake.EFORBIDDEN {
		t.Fatalf("a viewer's retry: %v, want %s", err, intake.EFORBIDDEN)
	}
	if _, err := e.ctl.Retry(ctx, stranger, intake.RetrySelection{EventID: ev.ID}, false); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's retry of the event: %v, want %s", err, intake.ENOTFOUND)
	}
	if _, err := e.ctl.Retry(ctx, stranger, intake.RetrySelection{ConsumerID: cons.ID}, false); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's retry of the consumer: %v, want %s", err, intake.ENOTFOUND)
	}
	dry, err := e.ctl.Retry(ctx, operator, intake.RetrySelection{ConsumerID: cons.ID}, true)
	if err != nil || dry.Count != 1 || len(dry.Items) != 1 || dry.Items[0].ID != ev.ID {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	e.settle(t)
	if n := len(app.envelopes()); n != 1 {
		t.Fatalf("a dry run made a call: %d calls", n)
	}
	r, err := e.ctl.Retry(ctx, operator, intake.RetrySelection{EventID: ev.ID}, false)
	if err != nil || r.Count != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	e.settle(t)
	if n := len(app.envelopes()); n != 2 {
		t.Fatalf("after the retry %d calls, want 2", n)
	}
	got, _ := e.store.Event(ctx, intake.Scope{}, ev.ID)
	ds, _ := e.store.Deliveries(ctx, intake.Scope{}, ev.ID)
	if got.State != intake.EventDelivered || len(ds) != 2 || ds[1].Attempt != 2 || ds[1].Outcome != intake.DeliveryHandled {
		t.Fatalf("event %s, deliveries %+v: want delivered at the second attempt", got.State, ds)
	}
	if r, err := e.ctl.Retry(ctx, operator, intake.RetrySelection{EventID: ev.ID}, false); err != nil || r.Count != 0 {
		t.Fatalf("retry of a delivered event = %+v, %v; want 0 made due", r, err)
	}
	audit, _ := e.store.ListAudit(ctx, intake.Scope{OrgID: e.org.ID}, intake.AuditFilter{Limit: 10})
	var retries []string
	for _, a := range audit.Items {
		if strings.HasSuffix(a.Action, ".retry") {
			retries = append(retries, a.Action+" "+a.Detail)
		}
	}
	if strings.Join(retries, "; ") != "event.retry count=0; event.retry count=1" {
		t.Fatalf("retries audited: %q", retries)
	}
}

func TestRetryOfADeadEventIsRefusedNamingTheReroute(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.consumerWith(t, 500, intake.Controls{Retry: intake.RetryPolicy{Attempts: 1}})
	e.receive(t, "d-1")
	e.settle(t)
	dead := events(t, e, intake.EventFilter{State: intake.EventDead})
	if len(dead) != 1 {
		t.Fatalf("%d dead events", len(dead))
	}
	_, err := e.ctl.Retry(ctx, as(intake.Scope{OrgID: e.org.ID}), intake.RetrySelection{EventID: dead[0].ID}, false)
	if intake.ErrorCode(err) != intake.ECONFLICT || !strings.Contains(intake.ErrorMessage(err), "/reroute") {
		t.Fatalf("retry of a dead event: %v, want %s naming the re-route", err, intake.ECONFLICT)
	}
	if control.HTTPStatus(err) != 409 {
		t.Fatalf("answered %d, want 409", control.HTTPStatus(err))
	}
}

func TestRetryGivesATrippedConsumerItsProbeNow(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	app, cons := e.consumerWith(t, 500, intake.Controls{BreakerFailures: 1, Retry: intake.RetryPolicy{Attempts: 5}})
	e.receive(t, "d-1")
	e.settle(t)
	e.receive(t, "d-2")
	e.settle(t)
	sc := intake.Scope{OrgID: e.org.ID}
	if h, _ := e.ctl.ConsumerHealth(ctx, as(sc), cons.ID); h.State != intake.ConsumerTripped || h.Held != 2 {
		t.Fatalf("health %+v, want tripped holding 2", h)
	}
	app.answer(200)
	e.clock.Advance(time.Second)
	e.settle(t)
	if n := len(app.envelopes()); n != 1 {
		t.Fatalf("%d calls before the probe, want the one that tripped it", n)
	}
	r, err := e.ctl.Retry(ctx, as(sc), intake.RetrySelection{ConsumerID: cons.ID}, false)
	if err != nil || r.Count != 2 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	e.settle(t)
	if n := len(app.envelopes()); n != 3 {
		t.Fatalf("%d calls after the retry, want the probe and then the other", n)
	}
	if h, _ := e.ctl.ConsumerHealth(ctx, as(sc), cons.ID); h.State != intake.ConsumerEnabled {
		t.Fatalf("health %+v after the probe succeeded", h)
	}
}

func TestAConsumersStatsAreAViewersReadOfItsOrg(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	_, cons := e.consumerWith(t, 200, intake.Controls{})
	e.receive(t, "d-1")
	e.settle(t)
	viewer := control.Caller{Scope: intake.Scope{OrgID: e.org.ID}, Actor: "test", Role: intake.RoleViewer}
	bs, err := e.ctl.ConsumerStats(ctx, viewer, cons.ID, intake.StatsDay)
	if err != nil || len(bs) != 24 || bs[23].Delivered != 1 {
		t.Fatalf("stats %+v, %v", bs, err)
	}
	if _, err := e.ctl.ConsumerStats(ctx, viewer, cons.ID, "30d"); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a 30d window: %v", err)
	}
	stranger := control.Caller{Scope: intake.Scope{OrgID: intake.NewID()}, Actor: "test", Role: intake.RoleViewer}
	if _, err := e.ctl.ConsumerStats(ctx, stranger, cons.ID, intake.StatsWeek); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's stats: %v", err)
	}
	ds, err := e.ctl.ConsumerDeliveries(ctx, viewer, cons.ID, 20)
	if err != nil || len(ds) != 1 || ds[0].Outcome != intake.DeliveryHandled {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
}

func TestAnIssuesRetryTakesItsEventsOfItsConsumerAndIsAuditedAsTheIssues(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	app, cons := e.consumerWith(t, 500, intake.Controls{Retry: intake.RetryPolicy{Attempts: 5, Base: time.Hour}})
	e.receive(t, "d-1")
	e.receive(t, "d-2")
	e.settle(t)
	retrying := events(t, e, intake.EventFilter{State: intake.EventRetrying})
	if len(retrying) != 2 {
		t.Fatalf("%d retrying events", len(retrying))
	}
	app.answer(200)
	sc := intake.Scope{OrgID: e.org.ID}
	issue := intake.NewID()
	sel := intake.RetrySelection{ConsumerID: cons.ID, EventIDs: []string{retrying[0].ID}, IssueID: issue}
	r, err := e.ctl.Retry(ctx, as(sc), sel, false)
	if err != nil || r.Count != 1 || r.Items[0].ID != retrying[0].ID {
		t.Fatalf("an issue's retry = %+v, %v", r, err)
	}
	e.settle(t)
	if got, _ := e.store.Event(ctx, intake.Scope{}, retrying[1].ID); got.State != intake.EventRetrying || len(app.envelopes()) != 3 {
		t.Fatalf("the other event is %s after %d calls: the retry took more than the issue's events", got.State, len(app.envelopes()))
	}
	audit, _ := e.store.ListAudit(ctx, sc, intake.AuditFilter{Limit: 1})
	if a := audit.Items[0]; a.Action != "issue.retry" || a.TargetID != issue || !strings.HasSuffix(a.Detail, "1 events count=1") {
		t.Fatalf("audited %+v", a)
	}
	sel.EventIDs = make([]string, 10_001)
	for i := range sel.EventIDs {
		sel.EventIDs[i] = intake.NewID()
	}
	if _, err := e.ctl.Retry(ctx, as(sc), sel, true); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a retry of 10 001 events: %v", err)
	}
}

// TestRetryingAnIssueMakesItsWaitingEventsDueNow: the delivery issue the
// settles opened lists its events; its retry (a dry run first, which
// changes nothing) makes them due at once; a viewer may not, another
// org's issue is not found.
func TestRetryingAnIssueMakesItsWaitingEventsDueNow(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	app, cons := e.consumerWith(t, 500, intake.Controls{Retry: intake.RetryPolicy{Attempts: 5, Base: time.Hour}})
	e.receive(t, "d-1")
	e.receive(t, "d-2")
	e.settle(t)
	sc := intake.Scope{OrgID: e.org.ID}
	issues, err := e.ctl.Issues(ctx, as(sc), intake.IssueQuery{ConsumerID: cons.ID})
	if err != nil || len(issues.Items) != 1 || issues.Items[0].Events != 2 {
		t.Fatalf("issues = %+v, %v; want one of 2 events", issues.Items, err)
	}
	issue := issues.Items[0]
	viewer := control.Caller{Scope: sc, Actor: "test", Role: intake.RoleViewer}
	stranger := control.Caller{Scope: intake.Scope{OrgID: intake.NewID()}, Actor: "test", Role: intake.RoleAdmin}
	if _, err := e.ctl.RetryIssue(ctx, viewer, issue.ID, false); intake.ErrorCode(err) != intake.EFORBIDDEN {
		t.Fatalf("a viewer's retry of an issue: %v", err)
	}
	if _, err := e.ctl.RetryIssue(ctx, stranger, issue.ID, false); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org's retry of the issue: %v", err)
	}
	app.answer(200)
	dry, err := e.ctl.RetryIssue(ctx, as(sc), issue.ID, true)
	if err != nil || dry.Count != 2 || len(dry.Items) != 2 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	e.settle(t)
	if n := len(app.envelopes()); n != 2 {
		t.Fatalf("after a dry run %d calls, want the 2 first ones", n)
	}
	r, err := e.ctl.RetryIssue(ctx, as(sc), issue.ID, false)
	if err != nil || r.Count != 2 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	e.settle(t)
	if delivered := events(t, e, intake.EventFilter{State: intake.EventDelivered}); len(delivered) != 2 || len(app.envelopes()) != 4 {
		t.Fatalf("%d delivered after %d calls; want both, within the hour's backoff", len(delivered), len(app.envelopes()))
	}
	got, err := e.ctl.Issue(ctx, as(sc), issue.ID, intake.IssueItemsQuery{})
	if err != nil || got.Status != intake.IssueResolved {
		t.Fatalf("the issue after its events were delivered: %s, %v; want resolved", got.Status, err)
	}
}

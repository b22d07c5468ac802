package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The retry-now and history cases (DESIGN §20): an operator makes waiting
// routes due at once, and reads a consumer's calls by hour and by day.

func retryNow(t *testing.T, s intake.Store, sc intake.Scope, sel intake.RetrySelection, now time.Time, dryRun bool, audit ...intake.AuditEntry) intake.Retried {
	t.Helper()
	r, err := s.RetryNow(context.Background(), sc, sel, now, 100, dryRun, audit...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func itemIDs(r intake.Retried) []string {
	var out []string
	for _, e := range r.Items {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

func sortedIDs(events ...intake.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

// testRetryNowMakesWaitingRoutesDue: a retry makes the selected routes
// that wait for a later attempt due at once, spending and restoring no
// attempt; a leased route is left alone, a dry run changes nothing, another
// org sees nothing, the action is audited with its count and wakes the
// routers.
func testRetryNowMakesWaitingRoutesDue(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	other := newFixture(t, s, "other")
	slow := f.consumer(t, s, "slow", intake.Controls{Retry: intake.RetryPolicy{Attempts: 5, Base: time.Hour}})
	ok := f.consumer(t, s, "ok", intake.Controls{})
	waiting := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(slow) })[0]
	leased := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(slow) })[0]
	shared := f.routed(t, s, 1, func(intake.Event) []intake.FanOutRoute { return to(slow, ok) })[0]
	claims := claimRoutes(t, s, t0, 100)
	for _, c := range claims {
		switch {
		case c.Event.ID == leased.ID:
		case c.ConsumerID == ok.ID:
			settleRoute(t, s, t0, c, intake.DeliveryHandled)
		default:
			settleRoute(t, s, t0, c, intake.DeliveryRetry)
		}
	}
	now := t0.Add(time.Second)
	if got := claimRoutes(t, s, now, 100); len(got) != 0 {
		t.Fatalf("claimed %d before the hour's backoff", len(got))
	}

	dry := retryNow(t, s, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{ConsumerID: slow.ID}, now, true)
	if dry.Count != 2 || !slices.Equal(itemIDs(dry), sortedIDs(waiting, shared)) {
		t.Fatalf("dry run = %d %v, want the two retrying events", dry.Count, itemIDs(dry))
	}
	if got := claimRoutes(t, s, now, 100); len(got) != 0 {
		t.Fatalf("a dry run made %d routes due", len(got))
	}
	if n := auditActions(t, s, f.org.ID)["event.retry"]; n != 0 {
		t.Fatalf("a dry run was audited %d times", n)
	}
	if r := retryNow(t, s, intake.Scope{OrgID: other.org.ID}, intake.RetrySelection{EventID: waiting.ID}, now, false); r.Count != 0 {
		t.Fatalf("another org's retry made %d due", r.Count)
	}

	wake, stop := s.Listen(intake.TopicRoutes)
	defer stop()
	drain(wake)
	a := intake.AuditEntry{ID: intake.NewID(), OrgID: f.org.ID, Actor: "key:ik_test", Action: "event.retry", TargetType: "event",
		TargetID: waiting.ID, At: now}
	r := retryNow(t, s, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{EventID: waiting.ID}, now, false, a)
	if r.Count != 1 || len(r.Items) != 1 || r.Items[0].ID != waiting.ID {
		t.Fatalf("retry of one event = %+v", r)
	}
	if !woken(wake) {
		t.Fatal("a retry did not wake the routers")
	}
	got := claimRoutes(t, s, now, 100)
	if len(got) != 1 || got[0].Event.ID != waiting.ID || got[0].ConsumerID != slow.ID || got[0].Attempt != 2 {
		t.Fatalf("claims after the retry = %+v, want the event's route at attempt 2", got)
	}
	page, err := s.ListAudit(ctx, intake.Scope{OrgID: f.org.ID}, intake.AuditFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Action != "event.retry" || !strings.HasSuffix(page.Items[0].Detail, "count=1") {
		t.Fatalf("audit = %+v, want the retry with its count", page.Items)
	}

	// An issue's retry: a consumer's routes of some events; the leased one
	// is left alone.
	r = retryNow(t, s, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{ConsumerID: slow.ID, EventIDs: []string{shared.ID, leased.ID}}, now, false)
	if r.Count != 1 || r.Items[0].ID != shared.ID {
		t.Fatalf("retry of an issue's events = %+v, want the shared event alone", r)
	}
	got = claimRoutes(t, s, now, 100)
	if len(got) != 1 || got[0].Event.ID != shared.ID || got[0].ConsumerID != slow.ID || got[0].Attempt != 2 {
		t.Fatalf("claims after the issue's retry = %+v", got)
	}
	if r := retryNow(t, s, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{ConsumerID: slow.ID}, now, false); r.Count != 0 {
		t.Fatalf("with every route leased a retry made %d due", r.Count)
	}

	// At most max events are taken, the earliest due first.
	more := f.routed(t, s, 3, func(intake.Event) []intake.FanOutRoute { return to(slow) })
	for i, c := range claimRoutes(t, s, now, 100) {
		settleRoute(t, s, now.Add(time.Duration(i)*time.Second), c, intake.DeliveryRetry)
	}
	r, err = s.RetryNow(ctx, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{ConsumerID: slow.ID}, now.Add(time.Minute), 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 2 {
		t.Fatalf("a retry bounded to 2 events made %d due", r.Count)
	}
	if got := claimRoutes(t, s, now.Add(time.Minute), 100); len(got) != 2 {
		t.Fatalf("claimed %d after a retry of 2 of %d", len(got), len(more))
	}
}

// testRetryNowGivesATrippedConsumerOneProbe: a tripped consumer's held
// routes are retried by one probe at once, not by all of them.
func testRetryNowGivesATrippedConsumerOneProbe(t *testing.T, s intake.Store) {
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "down", intake.Controls{BreakerFailures: 1, Retry: intake.RetryPolicy{Attempts: 5}})
	f.routed(t, s, 3, func(intake.Event) []intake.FanOutRoute { return to(c) })
	for _, cl := range claimRoutes(t, s, t0, 100) {
		settleRoute(t, s, t0, cl, intake.DeliveryRetry)
	}
	now := t0.Add(5 * time.Second)
	if h := health(t, s, c, now); h.State != intake.ConsumerTripped || h.Held != 3 {
		t.Fatalf("health = %+v, want tripped holding 3", h)
	}
	if got := claimRoutes(t, s, now, 100); len(got) != 0 {
		t.Fatalf("claimed %d before the breaker's probe", len(got))
	}
	if r := retryNow(t, s, intake.Scope{OrgID: f.org.ID}, intake.RetrySelection{ConsumerID: c.ID}, now, false); r.Count != 3 {
		t.Fatalf("retry made %d due, want 3", r.Count)
	}
	probe := claimRoutes(t, s, now, 100)
	if len(probe) != 1 || !probe[0].Probe {
		t.Fatalf("claims after the retry = %+v, want one probe", probe)
	}
	if more := claimRoutes(t, s, now, 100); len(more) != 0 {
		t.Fatalf("claimed %d beside the probe", len(more))
	}
	settleRoute(t, s, now, probe[0], intake.DeliveryHandled)
	if rest := claimRoutes(t, s, now, 100); len(rest) != 2 {
		t.Fatalf("claimed %d once the probe succeeded, want the other 2", len(rest))
	}
}

// testConsumerStats: a consumer's calls are counted by hour over 24 hours
// and by day over 7 days, ending with the current one, with nearest-rank
// latencies; its last deliveries are listed newest first.
func testConsumerStats(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	c := f.consumer(t, s, "c", intake.Controls{Retry: intake.RetryPolicy{Attempts: 5}})
	calls := []struct {
		at      time.Duration
		outcome string
		latency time.Duration
	}{
		{0, intake.DeliveryHandled, 10 * time.Millisecond},
		{10 * time.Minute, intake.DeliveryHandled, 30 * time.Millisecond},
		{20 * time.Minute, intake.DeliveryRetry, 20 * time.Millisecond},
		{-time.Hour, intake.DeliveryIgnored, 5 * time.Millisecond},
		{-25 * time.Hour, intake.DeliveryHandled, 7 * time.Millisecond},
		{-8 * 24 * time.Hour, intake.DeliveryHandled, 9 * time.Millisecond},
	}
	events := f.routed(t, s, len(calls), func(intake.Event) []intake.FanOutRoute { return to(c) })
	claims := byEvent(claimRoutes(t, s, t0, 100))
	for i, call := range calls {
		r := result(claims[events[i].ID], t0.Add(call.at), call.outcome)
		r.Delivery.Latency = call.latency
		if _, err := s.SettleRoute(ctx, t0, r, backoff); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(30 * time.Minute)
	sc := intake.Scope{OrgID: f.org.ID}
	show := func(bs []intake.DeliveryBucket) string {
		var out []string
		for _, b := range bs {
			if b.Delivered+b.Failed > 0 {
				out = append(out, fmt.Sprintf("%s %d/%d %v %v", b.Start.Format(time.RFC3339), b.Delivered, b.Failed, b.P50, b.P99))
			}
		}
		return strings.Join(out, "; ")
	}
	day, err := s.ConsumerStats(ctx, sc, c.ID, intake.StatsDay, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(day) != 24 || !day[0].Start.Equal(t0.Add(-23*time.Hour)) || !day[23].Start.Equal(t0) {
		t.Fatalf("24h buckets: %d from %v to %v", len(day), day[0].Start, day[len(day)-1].Start)
	}
	if got, want := show(day), "2026-11-30T11:00:00Z 1/0 5ms 5ms; 2026-11-30T12:00:00Z 2/1 20ms 30ms"; got != want {
		t.Fatalf("24h = %s\nwant  %s", got, want)
	}
	week, err := s.ConsumerStats(ctx, sc, c.ID, intake.StatsWeek, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(week) != 7 || !week[0].Start.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("7d buckets: %d from %v", len(week), week[0].Start)
	}
	if got, want := show(week), "2026-11-29T00:00:00Z 1/0 7ms 7ms; 2026-11-30T00:00:00Z 3/1 10ms 30ms"; got != want {
		t.Fatalf("7d = %s\nwant  %s", got, want)
	}
	if _, err := s.ConsumerStats(ctx, sc, c.ID, "1y", now); intake.ErrorCode(err) != intake.EINVALID {
		t.Fatalf("a window of 1y: %v, want %s", err, intake.EINVALID)
	}
	last, err := s.ConsumerDeliveries(ctx, sc, c.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last[0].EventID != events[2].ID || last[1].EventID != events[1].ID || last[0].Outcome != intake.DeliveryRetry {
		t.Fatalf("last deliveries = %+v, want the two latest, newest first", last)
	}
}

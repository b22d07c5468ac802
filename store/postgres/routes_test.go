package postgres

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

func (o org) consumer(t testing.TB, s intake.Store, k intake.Controls) intake.Consumer {
	t.Helper()
	c := intake.Consumer{ID: intake.NewID(), OrgID: o.org.ID, Name: "c", App: "app", URL: "http://127.0.0.1:9/",
		EventTypes: []string{"*"}, Enabled: true, SealedSecret: []byte("s"), CreatedAt: t0, Controls: k}
	if err := s.CreateConsumer(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// fannedOut takes n events through ClaimEvents and FanOut to the
// consumers, leasing nothing.
func (o org) fannedOut(t testing.TB, s *Store, n int, consumers ...string) []intake.Event {
	t.Helper()
	ctx := context.Background()
	var events []intake.Event
	for i := range n {
		m := o.ingest(t, s, `{"n":`+strconv.Itoa(i)+`}`)
		e := o.event(m, "evt_"+m.ID)
		claims, err := s.ClaimMessages(ctx, t0, time.Minute, 1)
		if err != nil || len(claims) != 1 {
			t.Fatalf("message claims %v %v", claims, err)
		}
		if _, err := s.SettleMessage(ctx, t0, intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt, To: intake.MessageProcessed,
			Outcome: intake.OutcomeEvents, Events: []intake.Event{e}}); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	for {
		claims, err := s.ClaimEvents(ctx, t0, time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(claims) == 0 {
			return events
		}
		for _, c := range claims {
			f := intake.FanOut{EventID: c.Event.ID, Attempt: c.Attempt}
			for _, id := range consumers {
				f.Routes = append(f.Routes, intake.FanOutRoute{ConsumerID: id})
			}
			if _, err := s.FanOut(ctx, t0, f); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRouteLimitsHoldAcrossProcesses has three processes (three stores,
// three pools) claim routes for one consumer at once, step by step under
// a simulated clock, each holding its calls in flight for a while: never
// more than max_in_flight are in flight, and over five seconds the lane
// grants its burst plus its rate times the time, within 10 %.
func TestRouteLimitsHoldAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	stores := []*Store{openURL(t, url, 4), openURL(t, url, 4), openURL(t, url, 4)}
	o := newOrg(t, stores[0], "acme")
	const maxInFlight, rate = 5, 20
	c := o.consumer(t, stores[0], intake.Controls{MaxInFlight: maxInFlight, RatePerSec: rate})
	o.fannedOut(t, stores[0], 200, c.ID)

	type held struct {
		claim intake.RouteClaim
		until int // the step it settles at
	}
	var (
		gate              sync.RWMutex // claims share it; a settle and its count take it alone
		mu                sync.Mutex
		inFlight, granted int
		most              int
		claimed           = map[string]bool{}
	)
	const step, steps = 50 * time.Millisecond, 100
	holding := make([][]held, len(stores))
	for i := 0; i <= steps; i++ {
		now := t0.Add(time.Duration(i) * step)
		var wg sync.WaitGroup
		for p, s := range stores {
			wg.Go(func() {
				var keep []held
				for _, h := range holding[p] {
					if h.until > i {
						keep = append(keep, h)
						continue
					}
					gate.Lock()
					_, err := s.SettleRoute(ctx, now, intake.RouteSettlement{EventID: h.claim.Event.ID, ConsumerID: h.claim.ConsumerID,
						Attempt: h.claim.Attempt, Called: true, Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID,
							EventID: h.claim.Event.ID, ConsumerID: h.claim.ConsumerID, Attempt: h.claim.Attempt,
							Outcome: intake.DeliveryHandled, StatusCode: 200, At: now}}, intake.DefaultBackoff)
					if err == nil {
						mu.Lock()
						inFlight--
						mu.Unlock()
					}
					gate.Unlock()
					if err != nil {
						t.Error(err)
					}
				}
				gate.RLock()
				claims, err := s.ClaimRoutes(ctx, now, time.Hour, intake.Calls(10))
				mu.Lock()
				inFlight += len(claims)
				granted += len(claims)
				most = max(most, inFlight)
				for _, c := range claims {
					if claimed[c.Event.ID] {
						t.Errorf("event %s claimed twice", c.Event.ID)
					}
					claimed[c.Event.ID] = true
				}
				mu.Unlock()
				gate.RUnlock()
				if err != nil {
					t.Error(err)
				}
				for j, c := range claims {
					keep = append(keep, held{claim: c, until: i + 1 + (j+p)%3})
				}
				holding[p] = keep
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	if most > maxInFlight {
		t.Errorf("%d calls were in flight at once; max_in_flight is %d", most, maxInFlight)
	}
	if most < maxInFlight {
		t.Errorf("at most %d calls were in flight: the test never reached max_in_flight %d", most, maxInFlight)
	}
	want := float64(rate*steps*step/time.Second + rate) // the rate over 5 s, plus the burst
	if g := float64(granted); g < want*0.9 || g > want*1.1 {
		t.Errorf("the lane granted %d calls over %v; want %.0f ± 10 %%", granted, steps*step, want)
	}
	t.Logf("granted %d calls over %v, at most %d in flight", granted, steps*step, most)
}

// TestSettleWritesNoticesAndRetentionForgetsRoutes: a failed call that
// trips the breaker, and the probe that closes it, write their notices and
// audit entries in their settles; retention then deletes the event's
// routes with it, and notices older than the org's retention, keeping
// newer ones.
func TestSettleWritesNoticesAndRetentionForgetsRoutes(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "acme")
	c := o.consumer(t, s, intake.Controls{BreakerFailures: 1})
	e := o.fannedOut(t, s, 1, c.ID)[0]
	settle := func(now time.Time, outcome string, status int) {
		t.Helper()
		claims, err := s.ClaimRoutes(ctx, now, time.Minute, intake.Calls(10))
		if err != nil || len(claims) != 1 {
			t.Fatalf("claims at %v: %+v %v", now, claims, err)
		}
		cl := claims[0]
		if _, err := s.SettleRoute(ctx, now, intake.RouteSettlement{EventID: e.ID, ConsumerID: c.ID, Attempt: cl.Attempt, Probe: cl.Probe,
			Called: true, Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID, EventID: e.ID, ConsumerID: c.ID,
				Attempt: cl.Attempt, Outcome: outcome, StatusCode: status, At: now}}, intake.DefaultBackoff); err != nil {
			t.Fatal(err)
		}
	}
	topics := func() map[string]int {
		t.Helper()
		// The issues' own notices are proven in storetest.
		rows, err := s.pool.Query(ctx, `SELECT topic FROM notices WHERE org_id = $1 AND topic NOT LIKE 'issue.%'`, o.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		list, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, topic := range list {
			got[topic]++
		}
		return got
	}
	audited := func(action string) bool {
		t.Helper()
		page, err := s.ListAudit(ctx, intake.Scope{OrgID: o.org.ID}, intake.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Items {
			if a.Action == action && a.TargetID == c.ID {
				return true
			}
		}
		return false
	}

	settle(t0, intake.DeliveryRetry, 503)
	if got := topics(); got[intake.NoticeConsumerTripped] != 1 || len(got) != 1 || !audited(intake.LaneTripped) {
		t.Fatalf("after the tripping call: notices %v, audited %v", got, audited(intake.LaneTripped))
	}
	if h, err := s.ConsumerHealth(ctx, intake.Scope{OrgID: o.org.ID}, c.ID, t0); err != nil || h.State != intake.ConsumerTripped ||
		h.Failed1h != 1 || h.LastStatus != 503 || h.Failures != 1 || h.Held != 1 || h.Due != 0 {
		t.Fatalf("tripped health = %+v %v", h, err)
	}
	settle(t0.Add(intake.BreakerFirstProbe), intake.DeliveryHandled, 200)
	if got := topics(); got[intake.NoticeConsumerRecovered] != 1 || len(got) != 2 || !audited(intake.LaneRecovered) {
		t.Fatalf("after the probe: notices %v", got)
	}
	if ev, _ := s.Event(ctx, intake.Scope{}, e.ID); ev.State != intake.EventDelivered {
		t.Fatalf("event = %s, want delivered", ev.State)
	}

	later := t0.Add(47 * time.Hour)
	if _, err := s.pool.Exec(ctx, `INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES ($1, $2, 'event.dead', $3, 'd', $4)`,
		intake.NewID(), o.org.ID, c.ID, later); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteSettled(ctx, t0.Add(48*time.Hour), 24*time.Hour, 10); err != nil || n != 1 {
		t.Fatalf("deleted %d messages (%v), want 1", n, err)
	}
	var routes int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM routes WHERE event_id = $1`, e.ID).Scan(&routes); err != nil || routes != 0 {
		t.Fatalf("%d routes of the deleted event are left (%v)", routes, err)
	}
	if got := topics(); got[intake.NoticeEventDead] != 1 || len(got) != 1 {
		t.Fatalf("notices after retention = %v, want only the newer one", got)
	}
}

// TestASuccessfulCallTakesNoLaneLockWhileFailuresCountUnderIt: the settle of
// a call that leaves the lane as it was (a success on a closed breaker)
// does not queue on the lane's row lock, which every call to the consumer
// would otherwise take in turn; failures, which move the lane, take it, so
// concurrent ones all count.
func TestASuccessfulCallTakesNoLaneLockWhileFailuresCountUnderIt(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, pgtest.Database(t), 12)
	o := newOrg(t, s, "acme")
	c := o.consumer(t, s, intake.Controls{})
	o.fannedOut(t, s, 10, c.ID)
	claims, err := s.ClaimRoutes(ctx, t0, time.Hour, intake.Calls(10))
	if err != nil || len(claims) != 10 {
		t.Fatalf("claims %d %v", len(claims), err)
	}
	settle := func(ctx context.Context, rc intake.RouteClaim, status int) error {
		outcome := intake.DeliveryHandled
		if status >= 300 {
			outcome = intake.DeliveryRetry
		}
		_, err := s.SettleRoute(ctx, t0, intake.RouteSettlement{EventID: rc.Event.ID, ConsumerID: rc.ConsumerID, Attempt: rc.Attempt,
			Called: true, Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID, EventID: rc.Event.ID, ConsumerID: rc.ConsumerID,
				Attempt: rc.Attempt, Outcome: outcome, StatusCode: status, At: t0}}, intake.DefaultBackoff)
		return err
	}
	failures := func() (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT failures FROM consumer_lanes WHERE consumer_id = $1`, c.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	hold, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM consumer_lanes WHERE consumer_id = $1 FOR UPDATE`, c.ID); err != nil {
		t.Fatal(err)
	}
	// With the lane locked elsewhere, a successful call settles at once; had
	// it queued on the lock it would still be waiting when this runs out.
	waited, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := settle(waited, claims[0], 200); err != nil {
		t.Fatalf("a successful call could not settle while the lane was locked: %v", err)
	}

	var wg sync.WaitGroup
	for _, rc := range claims[1:9] {
		wg.Go(func() {
			if err := settle(ctx, rc, 500); err != nil {
				t.Error(err)
			}
		})
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := failures(); n != 8 {
		t.Fatalf("8 calls failed at once; the lane counts %d failures in a row", n)
	}
	if err := settle(ctx, claims[9], 200); err != nil {
		t.Fatal(err)
	}
	if n := failures(); n != 0 {
		t.Fatalf("a success after 8 failures left the lane at %d failures; want 0", n)
	}
}

// TestCallSettlesTakenTogetherShareATransactionAndFailAlone hands the
// settler one batch as it takes what waits: eight results, among them a
// stale one, a failure that moves the lane and both routes of one event.
// Each settles as it would alone, one after the other, the stale one
// fails alone, and the batch costs the statements of two settles (one
// pass, and again with the lanes locked, since the failure moves one)
// where eight alone cost eight.
func TestCallSettlesTakenTogetherShareATransactionAndFailAlone(t *testing.T) {
	ctx := context.Background()
	s, rt := openCounted(t)
	o := newOrg(t, s, "acme")
	c1 := o.consumer(t, s, intake.Controls{})
	c2 := o.consumer(t, s, intake.Controls{})
	alone := o.fannedOut(t, s, 1, c1.ID)[0]
	some := o.fannedOut(t, s, 5, c1.ID)
	both := o.fannedOut(t, s, 1, c1.ID, c2.ID)[0]
	claims, err := s.ClaimRoutes(ctx, t0, time.Hour, intake.Calls(100))
	if err != nil || len(claims) != 8 {
		t.Fatalf("claims %d %v", len(claims), err)
	}
	claim := map[intake.RouteKey]intake.RouteClaim{}
	for _, rc := range claims {
		claim[intake.RouteKey{EventID: rc.Event.ID, ConsumerID: rc.ConsumerID}] = rc
	}
	req := func(eventID, consumerID string, status, attempt int) routeSettleRequest {
		outcome := intake.DeliveryHandled
		if status >= 300 {
			outcome = intake.DeliveryRetry
		}
		return routeSettleRequest{now: t0, b: intake.DefaultBackoff, done: make(chan routeSettled, 1), st: intake.RouteSettlement{
			EventID: eventID, ConsumerID: consumerID, Attempt: attempt, Called: true,
			Delivery: &intake.Delivery{ID: intake.NewID(), OrgID: o.org.ID, EventID: eventID, ConsumerID: consumerID, Attempt: attempt,
				Outcome: outcome, StatusCode: status, Error: map[bool]string{true: "HTTP 500"}[status >= 300], At: t0}}}
	}
	ok := func(eventID, consumerID string, status int) routeSettleRequest {
		return req(eventID, consumerID, status, claim[intake.RouteKey{EventID: eventID, ConsumerID: consumerID}].Attempt)
	}

	before := rt.statements.Load()
	one := []routeSettleRequest{ok(alone.ID, c1.ID, 200)}
	s.settleRoutes(one)
	if err := (<-one[0].done).err; err != nil {
		t.Fatal(err)
	}
	single := rt.statements.Load() - before

	batch := []routeSettleRequest{
		req(some[0].ID, c1.ID, 200, claim[intake.RouteKey{EventID: some[0].ID, ConsumerID: c1.ID}].Attempt+1), // not the call the lease is for
		ok(some[0].ID, c1.ID, 200), ok(some[1].ID, c1.ID, 200), ok(some[2].ID, c1.ID, 200), ok(some[3].ID, c1.ID, 200),
		ok(both.ID, c1.ID, 200), ok(both.ID, c2.ID, 200),
		ok(some[4].ID, c1.ID, 500), // last: a success after it would close the count again
	}
	before = rt.statements.Load()
	s.settleRoutes(batch)
	together := rt.statements.Load() - before
	for i, r := range batch {
		err := (<-r.done).err
		if i == 0 {
			if intake.ErrorCode(err) != intake.ESTALE {
				t.Errorf("the stale result settled: %v", err)
			}
		} else if err != nil {
			t.Errorf("result %d: %v", i, err)
		}
	}

	state := func(q string, args ...any) string { return s.scalar(t, q, args...) }
	route := func(e intake.Event, consumerID string) string {
		return state(`SELECT state || ' ' || attempt || ' ' || (lease_until IS NULL) || ' ' || last_error FROM routes
			WHERE event_id = $1 AND consumer_id = $2`, e.ID, consumerID)
	}
	event := func(e intake.Event) string { return state(`SELECT state FROM events WHERE id = $1`, e.ID) }
	for _, e := range append(some[:4:4], alone) {
		if got := route(e, c1.ID) + " / " + event(e); got != "handled 1 true  / delivered" {
			t.Errorf("a successful call's route and event: %q", got)
		}
	}
	if got := route(some[4], c1.ID) + " / " + event(some[4]); got != "waiting 1 true HTTP 500 / retrying" {
		t.Errorf("the failed call's route and event: %q", got)
	}
	if got := route(both, c1.ID) + ", " + route(both, c2.ID) + " / " + event(both); got != "handled 1 true , handled 1 true  / delivered" {
		t.Errorf("an event whose two routes settled in one batch: %q", got)
	}
	if got := state(`SELECT failures::text FROM consumer_lanes WHERE consumer_id = $1`, c1.ID); got != "1" {
		t.Errorf("the lane counts %s failures; want the one", got)
	}
	if got := state(`SELECT count(*)::text FROM deliveries WHERE org_id = $1`, o.org.ID); got != "8" {
		t.Errorf("%s delivery records; want one per result but the stale one (8)", got)
	}
	t.Logf("statements: one settle alone %d, eight together %d", single, together)
	if together > 2*single+2 {
		t.Errorf("eight settles together took %d statements; one alone takes %d", together, single)
	}
}

// TestACallSettleThatFailsItsBatchFailsAlone gives a batch a result whose
// write PostgreSQL refuses (a delivery id already taken): the batch's
// transaction fails, each result is settled alone, and only that one fails.
func TestACallSettleThatFailsItsBatchFailsAlone(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, pgtest.Database(t), 4)
	o := newOrg(t, s, "acme")
	c := o.consumer(t, s, intake.Controls{})
	o.fannedOut(t, s, 4, c.ID)
	claims, err := s.ClaimRoutes(ctx, t0, time.Hour, intake.Calls(10))
	if err != nil || len(claims) != 4 {
		t.Fatalf("claims %d %v", len(claims), err)
	}
	taken := intake.NewID()
	var batch []routeSettleRequest
	for i, rc := range claims {
		id := intake.NewID()
		if i == 1 || i == 2 {
			id = taken
		}
		batch = append(batch, routeSettleRequest{now: t0, b: intake.DefaultBackoff, done: make(chan routeSettled, 1), st: intake.RouteSettlement{
			EventID: rc.Event.ID, ConsumerID: rc.ConsumerID, Attempt: rc.Attempt, Called: true,
			Delivery: &intake.Delivery{ID: id, OrgID: o.org.ID, EventID: rc.Event.ID, ConsumerID: rc.ConsumerID, Attempt: rc.Attempt,
				Outcome: intake.DeliveryHandled, StatusCode: 200, At: t0}}})
	}
	s.settleRoutes(batch)
	var failed []int
	for i, r := range batch {
		if err := (<-r.done).err; err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 1 || failed[0] != 2 {
		t.Fatalf("results that failed: %v; want only the second to use the taken delivery id (2)", failed)
	}
	var handled int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM routes WHERE consumer_id = $1 AND state = 'handled'`, c.ID).Scan(&handled); err != nil {
		t.Fatal(err)
	}
	if handled != 3 {
		t.Fatalf("%d routes handled; want the three whose results could be written", handled)
	}
}

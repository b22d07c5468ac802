package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/router"
)

// controls changes a consumer's controls as the control plane does.
func (e *env) controls(t testing.TB, id string, change func(*intake.Controls)) {
	t.Helper()
	ctx := context.Background()
	c, err := e.store.Consumer(ctx, intake.Scope{}, id)
	if err != nil {
		t.Fatal(err)
	}
	change(&c.Controls)
	if err := e.store.UpdateConsumer(ctx, intake.Scope{}, c); err != nil {
		t.Fatal(err)
	}
}

// server is a consumer that counts its calls per event, records the peak
// of calls in flight at once, and answers as answer says (200 when nil).
type server struct {
	mu       sync.Mutex
	inFlight int
	peak     int
	calls    map[string]int // event id → calls
	log      []call         // every call, in the order answered
	handled  []call
	answer   func(call) int
	delay    time.Duration // how long each call takes to answer
	URL      string
}

// call is one request as the server saw it.
type call struct {
	EventID string
	At      time.Time // the test clock when it arrived
	Data    json.RawMessage
	Status  int
}

func newServer(t *testing.T, clock interface{ Now() time.Time }) *server {
	s := &server{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &env)
		c := call{EventID: r.Header.Get("webhook-id"), At: clock.Now(), Data: env.Data}
		s.mu.Lock()
		s.inFlight++
		s.peak = max(s.peak, s.inFlight)
		s.calls[c.EventID]++
		answer, delay := s.answer, s.delay
		s.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay) // the consumer's own work, not a wait for state
		}
		status := 200
		if answer != nil {
			status = answer(c)
		}
		c.Status = status
		s.mu.Lock()
		s.inFlight--
		s.log = append(s.log, c)
		if status == 200 {
			s.handled = append(s.handled, c)
		}
		s.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *server) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

func (s *server) peakInFlight() int { s.mu.Lock(); defer s.mu.Unlock(); return s.peak }

func (s *server) handledCalls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.handled)
}

func (s *server) setAnswer(f func(call) int) { s.mu.Lock(); s.answer = f; s.mu.Unlock() }

// health reads a consumer's health now.
func (e *env) health(t *testing.T, consumerID string) intake.ConsumerHealth {
	t.Helper()
	h, err := e.store.ConsumerHealth(context.Background(), intake.Scope{}, consumerID, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAPausedConsumersEventsAreHeldWithoutSpendingAttemptsAndResumeDrainsThem,
// whether the events are fanned out on a claim or planned with their
// settle: each held route has a held record, and resume drains them.
func TestAPausedConsumersEventsAreHeldWithoutSpendingAttemptsAndResumeDrainsThem(t *testing.T) {
	for _, planned := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "planned"}[planned], func(t *testing.T) { pausedConsumer(t, planned) })
	}
}

func pausedConsumer(t *testing.T, planned bool) {
	e := setup(t)
	held := newServer(t, e.clock)
	other := newServer(t, e.clock)
	p, _ := e.consumer(t, "paused", held.URL, false, "stripe.*")
	e.consumer(t, "other", other.URL, false, "stripe.*")
	e.controls(t, p.ID, func(c *intake.Controls) { c.Paused = true })
	e.planned = planned
	var ids []string
	for range 3 {
		ids = append(ids, e.event(t, "stripe.invoice.paid"))
	}
	e.run(t)
	if held.total() != 0 || other.total() != 3 {
		t.Fatalf("calls paused %d other %d: the other consumer must be unaffected", held.total(), other.total())
	}
	// Past every backoff of every attempt: nothing is spent, nothing dies.
	for range 30 {
		e.clock.Advance(24 * time.Hour)
		e.run(t)
	}
	if held.total() != 0 {
		t.Fatalf("a paused consumer was called %d times", held.total())
	}
	for _, id := range ids {
		ev, ds := e.get(t, id)
		outcomes := map[string]string{}
		for _, d := range ds {
			outcomes[d.ConsumerID] += d.Outcome
		}
		if ev.State != intake.EventPending || len(ds) != 2 || outcomes[p.ID] != intake.DeliveryHeld {
			t.Fatalf("held event %s with deliveries %+v, want pending with the other consumer's and a held record", ev.State, ds)
		}
	}
	if h := e.health(t, p.ID); h.State != intake.ConsumerPaused || h.Held != 3 || h.Due != 0 || h.LastError != "" {
		t.Fatalf("health %+v: want paused with 3 held, and no call's error (a held record is none)", h)
	}
	e.controls(t, p.ID, func(c *intake.Controls) { c.Paused = false })
	e.run(t)
	if held.total() != 3 || other.total() != 3 {
		t.Fatalf("after resume: calls paused %d other %d", held.total(), other.total())
	}
	for _, id := range ids {
		ev, ds := e.get(t, id)
		if ev.State != intake.EventDelivered {
			t.Fatalf("after resume: %s", ev.State)
		}
		for _, d := range ds {
			if d.ConsumerID == p.ID && d.Outcome != intake.DeliveryHeld && d.Attempt != 1 {
				t.Fatalf("the resumed call is attempt %d, want 1: holding spends none", d.Attempt)
			}
		}
	}
}

// runRouters runs routers on the store until the test ends.
func runRouters(t *testing.T, rs ...*router.Router) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { r.Run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func TestPausingAndResumingWhileEventsFlowDeliversEachEventOnceToEachConsumer(t *testing.T) {
	e := setup(t, func(c *router.Config) { c.Poll = 20 * time.Millisecond })
	toggled := newServer(t, e.clock)
	steady := newServer(t, e.clock)
	p, _ := e.consumer(t, "toggled", toggled.URL, false, "stripe.*")
	e.consumer(t, "steady", steady.URL, false, "stripe.*")
	runRouters(t, e.r)

	const events = 500
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx := context.Background()
		for i := range 200 { // 100 pauses and 100 resumes
			c, err := e.store.Consumer(ctx, intake.Scope{}, p.ID)
			if err != nil {
				t.Error(err)
				return
			}
			c.Controls.Paused = i%2 == 0
			if err := e.store.UpdateConsumer(ctx, intake.Scope{}, c); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond) // spreads the toggles over the flow
		}
	})
	ids := make([]string, events)
	for i := range ids {
		ids[i] = e.event(t, "stripe.invoice.paid")
	}
	wg.Wait()
	testkit.WaitFor(t, "every event at both consumers", func() bool { return toggled.total() >= events && steady.total() >= events })
	for _, id := range ids {
		if ev, _ := e.get(t, id); ev.State != intake.EventDelivered {
			t.Errorf("event %s is %s", id, ev.State)
		}
	}
	for name, s := range map[string]*server{"toggled": toggled, "steady": steady} {
		s.mu.Lock()
		for _, id := range ids {
			if s.calls[id] != 1 {
				t.Errorf("%s consumer got event %s %d times", name, id, s.calls[id])
			}
		}
		s.mu.Unlock()
	}
}

func TestMaxInFlightOneMakesCallsOneAtATimeAcrossRouters(t *testing.T) {
	e := setup(t, func(c *router.Config) { c.Poll = 20 * time.Millisecond })
	serial := newServer(t, e.clock)
	free := newServer(t, e.clock)
	serial.delay, free.delay = 20*time.Millisecond, 20*time.Millisecond
	s, _ := e.consumer(t, "serial", serial.URL, false, "stripe.*")
	e.consumer(t, "free", free.URL, false, "stripe.*")
	e.controls(t, s.ID, func(c *intake.Controls) { c.MaxInFlight = 1 })
	for range 20 {
		e.event(t, "stripe.invoice.paid")
	}
	other := router.New(router.Config{Store: e.store, Sealer: e.sealer, Clock: e.clock, Poll: 20 * time.Millisecond})
	runRouters(t, e.r, other)
	testkit.WaitFor(t, "every event at both consumers", func() bool { return serial.total() == 20 && free.total() == 20 })
	if p := serial.peakInFlight(); p != 1 {
		t.Fatalf("peak concurrency %d at the max_in_flight 1 consumer", p)
	}
	// The same load without the limit overlaps: the peak above is the
	// limit's doing.
	if p := free.peakInFlight(); p < 2 {
		t.Fatalf("peak concurrency %d at the unlimited consumer, want calls in parallel", p)
	}
}

func TestRatePerSecondHoldsTheCallsOfEachSimulatedSecondToTheRate(t *testing.T) {
	e := setup(t)
	rated := newServer(t, e.clock)
	c, _ := e.consumer(t, "rated", rated.URL, false, "stripe.*")
	const rate = 5
	e.controls(t, c.ID, func(ctl *intake.Controls) { ctl.RatePerSec = rate })
	for range 60 {
		e.event(t, "stripe.invoice.paid")
	}
	start := e.clock.Now()
	for step := 0; rated.total() < 60 && step < 1000; step++ {
		e.run(t)
		e.clock.Advance(50 * time.Millisecond)
	}
	perSecond := map[int]int{}
	last := 0
	for _, h := range rated.handledCalls() {
		sec := int(h.At.Sub(start) / time.Second)
		perSecond[sec]++
		last = max(last, sec)
	}
	if rated.total() != 60 {
		t.Fatalf("%d calls, want 60", rated.total())
	}
	// The first second may spend the burst (one second's tokens) besides
	// its own; every later whole second stays at the rate.
	if perSecond[0] > 2*rate {
		t.Errorf("first second: %d calls, want at most %d", perSecond[0], 2*rate)
	}
	for sec := 1; sec < last; sec++ {
		if n := perSecond[sec]; n < rate-1 || n > rate+1 {
			t.Errorf("second %d: %d calls, want %d (±1)", sec, n, rate)
		}
	}
	if last < 60/rate-2 {
		t.Errorf("60 calls took %d simulated seconds at %d/s", last+1, rate)
	}
}

func TestOrderingDeliversEachKeyInOrderWhileKeysProceedInParallel(t *testing.T) {
	e := setup(t, func(c *router.Config) {
		c.Backoff = intake.Backoff{Base: 10 * time.Second, Max: time.Second}
		c.Batch = 256
	})
	ordered := newServer(t, e.clock)
	ordered.delay = 2 * time.Millisecond
	var rmu sync.Mutex
	rnd := rand.New(rand.NewPCG(1, 2))
	ordered.answer = func(call) int {
		rmu.Lock()
		defer rmu.Unlock()
		if rnd.Float64() < 0.3 {
			return 500
		}
		return 200
	}
	c, _ := e.consumer(t, "ordered", ordered.URL, false, "stripe.*")
	e.controls(t, c.ID, func(ctl *intake.Controls) {
		ctl.Ordering = "subject"
		ctl.Retry = intake.RetryPolicy{Attempts: 30, Base: time.Millisecond}
	})
	const events, keys = 1000, 20
	// occurred_at is shuffled against the order of receipt: the order is
	// the provider's, not intake's.
	base := e.clock.Now().Add(-time.Hour)
	order := rand.New(rand.NewPCG(3, 4)).Perm(events)
	occurred := map[string]time.Time{}
	key := map[string]string{}
	for i := range events {
		e.occurred = base.Add(time.Duration(order[i]) * time.Second)
		k := fmt.Sprintf("obj_%d", i%keys)
		id := e.event(t, "stripe.invoice.paid", k)
		occurred[id], key[id] = e.occurred, k
	}
	// Every event is fanned out while the consumer is paused, so the
	// order applies to all of them (an event fanned out after a later one
	// of its key was delivered cannot come before it).
	e.controls(t, c.ID, func(ctl *intake.Controls) { ctl.Paused = true })
	for e.run(t) > 0 {
	}
	e.controls(t, c.ID, func(ctl *intake.Controls) { ctl.Paused = false })
	began := time.Now()
	for step := 0; len(ordered.handledCalls()) < events && step < 100000; step++ {
		if e.run(t) == 0 {
			e.clock.Advance(time.Second) // past the longest backoff
		}
	}
	took := time.Since(began)
	got := ordered.handledCalls()
	if len(got) != events {
		t.Fatalf("%d handled calls, want %d", len(got), events)
	}
	perKey := map[string][]time.Time{}
	seen := map[string]bool{}
	for _, h := range got {
		if seen[h.EventID] {
			t.Fatalf("event %s handled twice", h.EventID)
		}
		seen[h.EventID] = true
		perKey[key[h.EventID]] = append(perKey[key[h.EventID]], occurred[h.EventID])
	}
	for k, ts := range perKey {
		if !slices.IsSortedFunc(ts, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Errorf("key %s arrived out of order of occurred_at", k)
		}
	}
	calls := ordered.total()
	serial := time.Duration(calls) * ordered.delay
	t.Logf("%d events over %d keys: %d calls (%d failed) in %v; a serial consumer would need at least %v; peak %d in flight",
		events, keys, calls, calls-events, took.Round(time.Millisecond), serial, ordered.peakInFlight())
	if p := ordered.peakInFlight(); p < 2 {
		t.Fatalf("peak concurrency %d: keys must proceed in parallel", p)
	}
}

// audits returns the actions of the org's audit entries about a target,
// oldest first.
func (e *env) audits(t *testing.T, targetID string) []intake.AuditEntry {
	t.Helper()
	page, err := e.store.ListAudit(context.Background(), intake.Scope{OrgID: e.org.ID}, intake.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []intake.AuditEntry
	for _, a := range page.Items {
		if a.TargetID == targetID {
			out = append(out, a)
		}
	}
	slices.Reverse(out)
	return out
}

func TestTheBreakerTripsProbesAtDoublingIntervalsAndRecoversWithoutLosingAnEvent(t *testing.T) {
	e := setup(t)
	down := newServer(t, e.clock)
	down.setAnswer(func(call) int { return 503 })
	c, _ := e.consumer(t, "flaky", down.URL, false, "stripe.*")
	var ids []string
	for range 12 {
		ids = append(ids, e.event(t, "stripe.invoice.paid"))
	}
	start := e.clock.Now()
	e.run(t)
	// The calls handed over by the fan-out; the ones fanned out after the
	// breaker tripped wait for it.
	if n := down.total(); n < 10 {
		t.Fatalf("%d first calls, want at least the 10 that trip the breaker", n)
	}
	// Down for one simulated hour, the router stepped every 5 s.
	for e.clock.Now().Before(start.Add(time.Hour)) {
		e.clock.Advance(5 * time.Second)
		e.run(t)
	}
	if h := e.health(t, c.ID); h.State != intake.ConsumerTripped {
		t.Fatalf("health after an hour down: %+v", h)
	}
	down.setAnswer(nil)
	for step := 0; len(down.handledCalls()) < 12 && step < 1000; step++ {
		e.clock.Advance(5 * time.Second)
		e.run(t)
	}
	handled := down.handledCalls()
	if len(handled) != 12 {
		t.Fatalf("%d events handled after the consumer came back, want 12", len(handled))
	}
	// Every call after the first burst, up to the first success, was a
	// probe: one at a time, 30 s after the trip, then doubling to the
	// 30 min cap.
	down.mu.Lock()
	log := slices.Clone(down.log)
	down.mu.Unlock()
	var probes []time.Duration
	for _, c := range log {
		if !c.At.After(start) {
			continue
		}
		probes = append(probes, c.At.Sub(start))
		if c.Status == 200 {
			break
		}
	}
	want := []time.Duration{30 * time.Second, 90 * time.Second, 210 * time.Second, 450 * time.Second, 930 * time.Second,
		1890 * time.Second, 3690 * time.Second}
	if !slices.Equal(probes, want) {
		t.Fatalf("probes at %v after the trip, want %v", probes, want)
	}
	for _, id := range ids {
		if ev, _ := e.get(t, id); ev.State != intake.EventDelivered {
			t.Errorf("event %s is %s after the recovery", id, ev.State)
		}
	}
	var actions []string
	for _, a := range e.audits(t, c.ID) {
		actions = append(actions, a.Action)
	}
	if !slices.Equal(actions, []string{intake.LaneTripped, intake.LaneRecovered}) {
		t.Fatalf("audit %v, want tripped then recovered", actions)
	}
	if h := e.health(t, c.ID); h.State != intake.ConsumerEnabled || h.Failures != 0 {
		t.Fatalf("health after the recovery: %+v", h)
	}
}

func TestAConsumerFailingFor72HoursIsDisabledAndAudited(t *testing.T) {
	e := setup(t)
	down := newServer(t, e.clock)
	down.setAnswer(func(call) int { return 500 })
	c, _ := e.consumer(t, "dead-app", down.URL, false, "stripe.*")
	var ids []string
	for range 12 {
		ids = append(ids, e.event(t, "stripe.invoice.paid"))
	}
	start := e.clock.Now()
	e.run(t)
	for e.clock.Now().Before(start.Add(71 * time.Hour)) {
		e.clock.Advance(10 * time.Minute)
		e.run(t)
	}
	if got, _ := e.store.Consumer(context.Background(), intake.Scope{}, c.ID); !got.Enabled {
		t.Fatal("disabled before 72 h of failing")
	}
	for e.clock.Now().Before(start.Add(73 * time.Hour)) {
		e.clock.Advance(10 * time.Minute)
		e.run(t)
	}
	got, err := e.store.Consumer(context.Background(), intake.Scope{}, c.ID)
	if err != nil || got.Enabled {
		t.Fatalf("after 73 h failing: enabled %v, %v", got.Enabled, err)
	}
	var disabled *intake.AuditEntry
	for _, a := range e.audits(t, c.ID) {
		if a.Action == "consumer.disable" {
			disabled = &a
		}
	}
	if disabled == nil || disabled.Actor != "intake" || disabled.At.Before(start.Add(72*time.Hour)) || disabled.At.After(start.Add(72*time.Hour+30*time.Minute)) {
		t.Fatalf("disable audit %+v: want one by intake within a probe of 72 h", disabled)
	}
	// Its waiting routes are dropped, so no event waits on it for ever.
	calls := down.total()
	e.clock.Advance(time.Hour)
	e.run(t)
	for _, id := range ids {
		if ev, _ := e.get(t, id); ev.State != intake.EventNoConsumer {
			t.Errorf("event %s is %s, want no_consumer: its only consumer was disabled", id, ev.State)
		}
	}
	if down.total() != calls {
		t.Fatal("a disabled consumer was called")
	}
}

func TestAConsumersOwnRetryScheduleKillsItsRouteAloneWhileAnotherKeepsRetrying(t *testing.T) {
	e := setup(t)
	short := newServer(t, e.clock)
	long := newServer(t, e.clock)
	short.setAnswer(func(call) int { return 500 })
	long.setAnswer(func(call) int { return 500 })
	s, _ := e.consumer(t, "short", short.URL, false, "stripe.*")
	l, _ := e.consumer(t, "long", long.URL, false, "stripe.*")
	e.controls(t, s.ID, func(c *intake.Controls) { c.Retry = intake.RetryPolicy{Attempts: 2, Base: time.Millisecond} })
	id := e.event(t, "stripe.invoice.paid")
	e.run(t)
	e.clock.Advance(time.Millisecond)
	e.run(t)
	if short.total() != 2 || long.total() != 1 {
		t.Fatalf("calls short %d long %d: the short schedule retries after 1 ms, the default after 10 s", short.total(), long.total())
	}
	// The default schedule's second and third calls, 10 s and 40 s on.
	e.clock.Advance(10 * time.Second)
	e.run(t)
	e.clock.Advance(40 * time.Second)
	e.run(t)
	ev, ds := e.get(t, id)
	if short.total() != 2 {
		t.Fatalf("the consumer with 2 attempts was called %d times", short.total())
	}
	if ev.State != intake.EventRetrying || long.total() != 3 {
		t.Fatalf("event %s, long consumer called %d times: it keeps retrying on its own schedule", ev.State, long.total())
	}
	last := map[string]intake.Delivery{}
	for _, d := range ds {
		last[d.ConsumerID] = d
	}
	if last[s.ID].Attempt != 2 || last[l.ID].Attempt != long.total() {
		t.Fatalf("last attempts short %d long %d", last[s.ID].Attempt, last[l.ID].Attempt)
	}
	if h := e.health(t, s.ID); h.Due != 0 || h.Held != 0 || h.InFlight != 0 {
		t.Fatalf("short consumer health %+v: its route is dead, nothing waits", h)
	}
}

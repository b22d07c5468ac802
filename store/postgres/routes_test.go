package postgres

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

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
					err := s.SettleRoute(ctx, now, intake.RouteSettlement{EventID: h.claim.Event.ID, ConsumerID: h.claim.ConsumerID,
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
				claims, err := s.ClaimRoutes(ctx, now, time.Hour, 10)
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

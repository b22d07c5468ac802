package router_test

import (
	"net/http"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/pressure"
	"github.com/intakehq/intake/router"
)

func TestUnderIngestPressureTheRouterTakesAShareOfItsSlotsThenResumes(t *testing.T) {
	p := pressure.New(0)
	e := setup(t, func(c *router.Config) { c.Pressure, c.MaxEvents = p, 16 }) // 2 of 16 slots while high
	rec, url := newRecorder(t, http.StatusOK)
	e.consumer(t, "app", url, false, "*")
	var ids []string
	for range 6 {
		ids = append(ids, e.event(t, "invoice.paid"))
	}
	delivered := func() (n int) {
		for _, id := range ids {
			if ev, _ := e.get(t, id); ev.State == intake.EventDelivered {
				n++
			}
		}
		return n
	}
	p.Enter() // one request waits for its commit, above the threshold of 0
	e.run(t)
	if n, calls := delivered(), rec.calls(); n != 2 || calls != 2 {
		t.Fatalf("under pressure one round delivered %d events in %d calls; want 2 and 2 (its share of the slots)", n, calls)
	}
	p.Leave()
	e.run(t)
	if n, calls := delivered(), rec.calls(); n != 6 || calls != 6 {
		t.Fatalf("calm again, the next round left %d of 6 delivered after %d calls", n, calls)
	}
}

package router_test

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
)

// TestAConsumerAtAnInternalServiceRecordsWhatFailedNotTheServicesGreeting:
// a consumer pointed at a port where a service speaks first (NATS, MariaDB)
// must not read its greeting back from the delivery record, its route's
// last error or its health.
func TestAConsumerAtAnInternalServiceRecordsWhatFailedNotTheServicesGreeting(t *testing.T) {
	for name, greeting := range map[string][]byte{"nats": testkit.NATSGreeting, "mariadb": testkit.MariaDBGreeting} {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			c, _ := e.consumer(t, "app", "http://"+testkit.Banner(t, greeting)+"/hooks", false, "*")
			id := e.event(t, "stripe.invoice.paid")
			e.run(t)
			ev, ds := e.get(t, id)
			if len(ds) != 1 || ds[0].Outcome != intake.DeliveryRetry {
				t.Fatalf("deliveries %+v", ds)
			}
			h := e.health(t, c.ID)
			for what, recorded := range map[string]string{"delivery": ds[0].Error, "health": h.LastError} {
				if recorded != "malformed HTTP answer" || strings.Contains(recorded, testkit.Marker) {
					t.Errorf("%s error %q, want %q", what, recorded, "malformed HTTP answer")
				}
			}
			if ev.State != intake.EventRetrying {
				t.Fatalf("event %s", ev.State)
			}
		})
	}
}

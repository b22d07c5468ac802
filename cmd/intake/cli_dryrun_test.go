package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/internal/testkit"
)

// Every bulk action of the CLI takes --dry-run: it prints how many rows
// the action would take and the first of them, and changes nothing; the
// lists take --provider-event-id and --consumer.
func TestCLIBulkActionsTakeDryRunAndListsFilterByProviderEventAndConsumer(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	crm := decodeOut[api.Consumer](t, s.mustRunJSON(t, org.APIKey, "consumers", "add", "--name", "crm", "--app", "crm",
		"--url", "http://127.0.0.1:9/crm", "--event-type", "shop.*", "--disabled"))
	delivered := s.settled(t, org, conn, ep, "shop.order.paid", `order 1`, `{"n":1}`)
	testkit.Route(t, s.store, time.Now().UTC(), delivered.ID, intake.EventDelivered, intake.Delivery{ConsumerID: crm.ID, Outcome: intake.DeliveryHandled, StatusCode: 200})
	var unwanted []intake.Event
	for i := range 3 {
		ev := s.settled(t, org, conn, ep, "shop.order.paid", "order "+string(rune('2'+i)), `{"n":2}`)
		testkit.Route(t, s.store, time.Now().UTC(), ev.ID, intake.EventNoConsumer)
		unwanted = append(unwanted, ev)
	}

	out := s.mustRun(t, org.APIKey, "messages", "list", "--provider-event-id", delivered.ProviderEventID)
	if !strings.Contains(out, delivered.MessageID) || strings.Contains(out, unwanted[0].MessageID) {
		t.Fatalf("messages list --provider-event-id:\n%s", out)
	}
	out = s.mustRun(t, org.APIKey, "events", "list", "--consumer", crm.ID)
	if !strings.Contains(out, delivered.ID) || strings.Contains(out, unwanted[0].ID) {
		t.Fatalf("events list --consumer:\n%s", out)
	}

	for _, args := range [][]string{
		{"events", "reroute", "--state", "no_consumer", "--dry-run"},
		{"events", "search", "--type", "shop.order.paid", "--reroute", "--dry-run"},
	} {
		out := s.mustRun(t, org.APIKey, args...)
		if !strings.HasPrefix(out, "dry run: would re-route 3 events; nothing was changed\n") || !strings.Contains(out, unwanted[2].ID) ||
			strings.Contains(out, delivered.ID) {
			t.Fatalf("%s:\n%s", strings.Join(args, " "), out)
		}
	}
	for _, args := range [][]string{
		{"messages", "search", "--endpoint", ep.ID, "--replay", "--dry-run"},
		{"replay", "--endpoint", ep.ID, "--since", "1h", "--dry-run"},
	} {
		out := s.mustRun(t, org.APIKey, args...)
		if !strings.HasPrefix(out, "dry run: would replay 4 messages; nothing was changed\n") || !strings.Contains(out, delivered.MessageID) {
			t.Fatalf("%s:\n%s", strings.Join(args, " "), out)
		}
	}
	if n := len(decodeOut[api.List[api.Message]](t, s.mustRunJSON(t, org.APIKey, "messages", "list")).Items); n != 4 {
		t.Fatalf("%d messages after the dry runs, want the 4 there were", n)
	}
	if ev := decodeOut[api.List[api.Event]](t, s.mustRunJSON(t, org.APIKey, "events", "list", "--state", "no_consumer")); len(ev.Items) != 3 {
		t.Fatalf("%d no_consumer events after the dry runs, want 3", len(ev.Items))
	}
	for _, args := range [][]string{
		{"events", "search", "--dry-run"},
		{"events", "reroute", unwanted[0].ID, "--dry-run"},
		{"replay", "--message", delivered.MessageID, "--dry-run"},
	} {
		if _, err := s.run(t, org.APIKey, args...); err == nil || !strings.Contains(err.Error(), "--dry-run") {
			t.Errorf("%s: %v, want a refusal naming --dry-run", strings.Join(args, " "), err)
		}
	}
	if out := s.mustRun(t, org.APIKey, "events", "reroute", "--state", "no_consumer"); !strings.Contains(out, "3") {
		t.Fatalf("the re-route after its dry run: %q", out)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestCLIRetryNowPrintsTheCountAndADryRunTheFirstEvents(t *testing.T) {
	s := newServer(t)
	acme := s.newTenant(t, "acme")
	c := decodeOut[api.Consumer](t, s.mustRunJSON(t, acme.org.APIKey, "consumers", "add", "--name", "crm", "--app", "crm",
		"--url", "http://127.0.0.1:9/crm", "--event-type", "*", "--retry-attempts", "5", "--retry-base", "1h"))
	ev := s.routedEvent(t, acme, "test.thing", intake.EventRetrying,
		intake.Delivery{ConsumerID: c.ID, Outcome: intake.DeliveryRetry, StatusCode: 500, Error: "consumer answered 500"})

	out := s.mustRun(t, acme.org.APIKey, "consumers", "retry", c.ID, "--dry-run")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "dry run: 1 event would be made due now" || !strings.HasPrefix(lines[1], "ID ") ||
		!strings.HasPrefix(lines[2], ev.ID+" ") || !strings.Contains(lines[2], "retrying") {
		t.Fatalf("consumers retry --dry-run:\n%s", out)
	}
	issues := decodeOut[api.List[api.Issue]](t, s.mustRunJSON(t, acme.org.APIKey, "issues", "list", "--consumer", c.ID))
	if len(issues.Items) != 1 {
		t.Fatalf("issues of the consumer: %+v", issues.Items)
	}
	out = s.mustRun(t, acme.org.APIKey, "issues", "retry", issues.Items[0].ID, "--dry-run")
	if !strings.HasPrefix(out, "dry run: 1 event would be made due now\n") || !strings.Contains(out, ev.ID) {
		t.Fatalf("issues retry --dry-run:\n%s", out)
	}
	if out := s.mustRun(t, acme.org.APIKey, "events", "retry", ev.ID); out != "1 event made due now\n" {
		t.Fatalf("events retry: %q", out)
	}
	if _, err := s.run(t, acme.org.APIKey, "events", "retry", intake.NewID()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("retry of an unknown event: %v", err)
	}
}

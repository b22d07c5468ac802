package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// TestRulesTestFailsWhenTheRuleFailsOnTheEvent: `intake rules test` prints
// each result, and exits with an error when the rule failed on the event
// (a filter reading a field the event lacks), so a script can stop on it;
// a rule that runs exits cleanly.
func TestRulesTestFailsWhenTheRuleFailsOnTheEvent(t *testing.T) {
	s := newServer(t)
	tn := s.newTenant(t, "acme")
	ev := s.routedEvent(t, tn, "order.paid", intake.EventNoConsumer)
	dir := t.TempDir()
	broken, fine := filepath.Join(dir, "broken.cel"), filepath.Join(dir, "fine.cel")
	for path, src := range map[string]string{broken: `event.data.no_such_field == "x"`, fine: `event.type == "order.paid"`} {
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := s.run(t, tn.org.APIKey, "rules", "test", "--source", broken, "--event", ev.ID)
	if err == nil || !strings.Contains(err.Error(), "the filter failed") || !strings.Contains(out, `"error"`) {
		t.Fatalf("a filter failing on the event: err %v, output:\n%s", err, out)
	}
	out, err = s.run(t, tn.org.APIKey, "rules", "test", "--source", fine, "--event", ev.ID)
	if err != nil || !strings.Contains(out, `"result": true`) {
		t.Fatalf("a filter that runs: err %v, output:\n%s", err, out)
	}
}

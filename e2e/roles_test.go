package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cliAs runs the intake binary as a client of s with tok, returning its
// stdout, its stderr and whether it failed.
func (s *server) cliAs(t *testing.T, tok string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "INTAKE_URL="+s.url, "INTAKE_TOKEN="+tok)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out), stderr.String(), err
}

// TestAViewerKeyIsRefusedAReplayAndAnOperatorsMayReplayButNotAddAConsumer:
// keys minted with `keys create --role` act with that role through the
// real binary's API, whichever client calls it.
func TestAViewerKeyIsRefusedAReplayAndAnOperatorsMayReplayButNotAddAConsumer(t *testing.T) {
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "roles-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the webhook was answered %d", resp.StatusCode)
	}
	msgs := s.settledMessages(t)
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	key := func(role string) string {
		t.Helper()
		var k struct{ Key, Role string }
		if err := json.Unmarshal([]byte(s.cli(t, "keys", "create", "--org", orgs.Items[0].ID, "--role", role, "--json")), &k); err != nil || k.Role != role {
			t.Fatalf("keys create --role %s: %+v %v", role, k, err)
		}
		return k.Key
	}
	viewer, operator := key("viewer"), key("operator")
	if out := s.cli(t, "keys", "list"); !strings.Contains(out, "ROLE") || !strings.Contains(out, "viewer") || !strings.Contains(out, "operator") {
		t.Fatalf("keys list shows no roles:\n%s", out)
	}

	if out, _, err := s.cliAs(t, viewer, "messages", "list"); err != nil || !strings.Contains(out, msgs[0].ID) {
		t.Fatalf("a viewer lists messages: %v\n%s", err, out)
	}
	_, stderr, err := s.cliAs(t, viewer, "replay", "--message", msgs[0].ID)
	if err == nil || !strings.Contains(stderr, "needs the operator role") {
		t.Fatalf("a viewer's replay: %v %s; want it refused naming the operator role", err, stderr)
	}
	if n := len(s.messages(t)); n != 1 {
		t.Fatalf("a refused replay made a message: %d messages", n)
	}

	if out, stderr, err := s.cliAs(t, operator, "replay", "--message", msgs[0].ID); err != nil {
		t.Fatalf("an operator's replay: %v\n%s%s", err, out, stderr)
	}
	eventually(t, 30*time.Second, "the replay is stored", func() bool { return len(s.messages(t)) == 2 })
	_, stderr, err = s.cliAs(t, operator, "consumers", "add", "--name", "crm", "--app", "crm", "--url", "http://127.0.0.1:9/crm",
		"--event-type", "github.*")
	if err == nil || !strings.Contains(stderr, "needs the admin role") {
		t.Fatalf("an operator added a consumer: %v %s", err, stderr)
	}
	var consumers struct{ Items []any }
	s.api(t, "GET", "/api/v1/consumers", nil, &consumers)
	if len(consumers.Items) != 0 {
		t.Fatalf("%d consumers after a refused add", len(consumers.Items))
	}
}

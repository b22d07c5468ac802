package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// issue posts a signed GitHub issues delivery about an issue titled title,
// opened by login.
func issue(t *testing.T, url, id, login, title string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"action":"opened","issue":{"node_id":"I_%s","title":%q,"labels":[{"name":"bug"},{"name":%q}]},`+
		`"sender":{"login":%q},"repository":{"node_id":"R_1"}}`, id, title, "team-"+login, login)
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ingress answered %d", resp.StatusCode)
	}
}

// cliFails runs the intake binary as a client of s, which must fail, and
// returns what it wrote to stderr.
func (s *server) cliFails(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "INTAKE_URL="+s.url, "INTAKE_TOKEN="+staffToken)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err == nil {
		t.Fatalf("intake %s succeeded: %s", strings.Join(args, " "), out)
	}
	return stderr.String()
}

// TestSearchFromTheCLIFindsEventsByMatchAndWordsAndReplaysWhatItFinds: a
// real server is searched with `intake events search` and `intake messages
// search`; the result holds exactly the webhooks asked for, survives a
// restart, and `--replay` replays them.
func TestSearchFromTheCLIFindsEventsByMatchAndWordsAndReplaysWhatItFinds(t *testing.T) {
	data := t.TempDir()
	s := start(t, data)
	path := setupGitHub(t, s)
	issue(t, s.url+path, "d-1", "ann", "Checkout crashes on refund")
	issue(t, s.url+path, "d-2", "bob", "Flaky test in billing")
	issue(t, s.url+path, "d-3", "ann", "Typo in the README")
	eventually(t, 30*time.Second, "three events", func() bool { return len(s.events(t)) == 3 })

	type found struct {
		Items []struct {
			ID        string
			MessageID string `json:"message_id"`
			Data      json.RawMessage
			ReplayOf  string `json:"replay_of"`
		}
	}
	search := func(args ...string) found {
		t.Helper()
		var f found
		out := s.cli(t, append(args, "--json")...)
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("intake %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return f
	}
	titles := func(f found) []string {
		var out []string
		for _, it := range f.Items {
			var d struct{ Issue struct{ Title string } }
			json.Unmarshal(it.Data, &d)
			out = append(out, d.Issue.Title)
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		if got := titles(search("events", "search", "--match", `{"sender":{"login":"ann"}}`)); strings.Join(got, "|") != "Typo in the README|Checkout crashes on refund" {
			t.Errorf("%s: ann's events = %q", when, got)
		}
		if got := titles(search("events", "search", "--match", `{"issue":{"labels":[{"name":"team-bob"}]}}`)); strings.Join(got, "|") != "Flaky test in billing" {
			t.Errorf("%s: events labelled team-bob = %q", when, got)
		}
		if got := titles(search("events", "search", "--q", "REFUND checkout", "--since", "1h")); strings.Join(got, "|") != "Checkout crashes on refund" {
			t.Errorf("%s: events with refund and checkout = %q", when, got)
		}
		if got := search("events", "search", "--match", `{"sender":{"login":"carol"}}`); len(got.Items) != 0 {
			t.Errorf("%s: carol's events = %q", when, titles(got))
		}
		if out := s.cli(t, "events", "search", "--match", `{"sender":{"login":"bob"}}`); !strings.Contains(out, "github.issues.opened") ||
			strings.Count(out, "\n") != 2 {
			t.Errorf("%s: the table of bob's events:\n%s", when, out)
		}
	}
	check("as received")
	if stderr := s.cliFails(t, "events", "search", "--match", `{"sender":`); !strings.Contains(stderr, "match must be a JSON object") {
		t.Fatalf("a malformed --match: %s", stderr)
	}

	// The same answers after a restart on the same data.
	s.kill()
	s = start(t, data)
	check("after a restart")

	msgs := search("messages", "search", "--q", "flaky")
	if len(msgs.Items) != 1 {
		t.Fatalf("messages holding flaky: %+v", msgs)
	}
	if out := s.cli(t, "messages", "search", "--q", "flaky", "--replay"); out != "replayed 1 messages\n" {
		t.Fatalf("messages search --replay: %q", out)
	}
	eventually(t, 30*time.Second, "the replay processed into a fourth event", func() bool { return len(s.events(t)) == 4 })
	replays := search("messages", "search", "--q", "flaky")
	if len(replays.Items) != 2 || replays.Items[0].ReplayOf != msgs.Items[0].ID {
		t.Fatalf("after the replay, messages holding flaky: %+v", replays)
	}
}

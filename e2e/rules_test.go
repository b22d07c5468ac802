package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/delivery"
)

// cli runs the intake binary as a client of s and returns its stdout.
func (s *server) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "INTAKE_URL="+s.url, "INTAKE_TOKEN="+staffToken)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("intake %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// TestRulesFromTheCLIFilterAndReshapeWhatAConsumerReceives: a consumer
// gets a filter and a transform from files through the CLI, both are tried
// against a stored event with `intake rules test`, and the next webhooks
// arrive filtered and reshaped, signed over the reshaped body.
func TestRulesFromTheCLIFilterAndReshapeWhatAConsumerReceives(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 8)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), b}
	}))
	defer consumer.Close()

	// A generous time limit: these tests are about what rules do, not
	// their limits, and CI machines are loaded.
	s := start(t, t.TempDir(), "--script-timeout", "2s")
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	var cons struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	if err := json.Unmarshal([]byte(s.cli(t, "consumers", "add", "--org", orgs.Items[0].ID, "--name", "chat", "--app", "chat",
		"--url", consumer.URL, "--event-type", "github.*", "--json")), &cons); err != nil {
		t.Fatal(err)
	}

	// A first webhook, before any rule: it is delivered as the envelope.
	send := func(id string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, id))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("before-rules")
	first := <-received
	var env struct{ ID string }
	json.Unmarshal(first.body, &env)

	dir := t.TempDir()
	filter := filepath.Join(dir, "only-opened.cel")
	transform := filepath.Join(dir, "chat.js")
	os.WriteFile(filter, []byte(`headers["x-github-event"] == "issues" && event.data.delivery != "skip-me"`), 0o600)
	os.WriteFile(transform, []byte(`function transform(event, context) {
  return {body: {text: "New issue event " + event.data.delivery, type: event.type}, headers: {"X-Chat": "1"}};
}`), 0o600)

	// Tried against the stored event before saving.
	out := s.cli(t, "rules", "test", "--source", filter, "--event", env.ID)
	if !strings.Contains(out, `"result": true`) || !strings.Contains(out, `"duration_ms"`) {
		t.Fatalf("rules test of the filter:\n%s", out)
	}
	out = s.cli(t, "rules", "test", "--source", transform, "--event", env.ID)
	if !strings.Contains(out, "New issue event before-rules") {
		t.Fatalf("rules test of the transform:\n%s", out)
	}
	s.cli(t, "consumers", "update", cons.ID, "--filter-file", filter, "--transform-file", transform)
	out = s.cli(t, "rules", "test", "--consumer", cons.ID, "--event", env.ID)
	if !strings.Contains(out, "filter:") || !strings.Contains(out, "transform:") {
		t.Fatalf("rules test of the consumer:\n%s", out)
	}

	send("skip-me")
	send("after-rules")
	var g got
	select {
	case g = <-received:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer never got the reshaped event")
	}
	var body struct{ Text, Type string }
	if err := json.Unmarshal(g.body, &body); err != nil || body.Text != "New issue event after-rules" || body.Type != "github.issues.opened" ||
		g.header.Get("X-Chat") != "1" {
		t.Fatalf("received %s %v: want the transform's body", g.body, g.header)
	}
	ts := g.header.Get("webhook-timestamp")
	var unix int64
	json.Unmarshal([]byte(ts), &unix)
	if want, _ := delivery.Sign(cons.SigningSecret, g.header.Get("webhook-id"), unix, g.body); g.header.Get("webhook-signature") != want {
		t.Fatal("the signature does not cover the reshaped body")
	}
	var evs struct {
		Items []struct{ ID, State string }
	}
	eventually(t, 30*time.Second, "the skipped webhook's event settles filtered", func() bool {
		s.api(t, "GET", "/api/v1/events?state=filtered", nil, &evs)
		return len(evs.Items) == 1
	})
	select {
	case g := <-received:
		t.Fatalf("the consumer got a webhook its filter declines: %s", g.body)
	default:
	}
}

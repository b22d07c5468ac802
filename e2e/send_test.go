package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSendSaysWhetherIntakeAcceptedTheSample: the endpoint answers 200
// before it verifies, so `intake send` follows the stored message and says
// what became of it: a wrong --secret fails naming the signature, the right
// one reports the message processed; without a token it says the outcome
// is still to come and how to see it.
func TestSendSaysWhetherIntakeAcceptedTheSample(t *testing.T) {
	s := start(t, t.TempDir())
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "github", "name": "gh",
		"secrets": []string{githubSecret}}, &conn)
	var ep struct{ URL, Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID}, &ep)
	url := s.url + "/webhooks/" + ep.Token

	send := func(token, secret string) (string, error) {
		cmd := exec.Command(binary, "send", "--endpoint-url", url, "--provider", "github", "--secret", secret, "--wait", "30s")
		cmd.Env = append(os.Environ(), "INTAKE_URL="+s.url, "INTAKE_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := send(staffToken, "not-the-secret")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "200 OK") || !strings.Contains(out, ": ignored: signature") ||
		!strings.Contains(out, "check --secret") {
		t.Fatalf("send with a wrong secret: %v\n%s", err, out)
	}
	out, err = send(staffToken, githubSecret)
	if err != nil || !strings.Contains(out, ": processed: events") {
		t.Fatalf("send with the right secret: %v\n%s", err, out)
	}
	out, err = send("", "not-the-secret")
	if err != nil || !strings.Contains(out, "verifies its signature in the background") || !strings.Contains(out, "intake messages list") {
		t.Fatalf("send without a token: %v\n%s", err, out)
	}
}

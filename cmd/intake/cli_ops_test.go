package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

func TestCLIReplaysAMessageAndAnEndpointWindowWithProgress(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	var ids []string
	for i := range 3 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		sum := sha256.Sum256([]byte(body))
		m := intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
			Header: http.Header{}, Body: []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: time.Now().UTC().Add(-time.Hour),
			State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: time.Now()}
		if err := s.store.Ingest(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	one := decodeOut[struct {
		ID       string `json:"id"`
		ReplayOf string `json:"replay_of"`
	}](t, s.mustRunJSON(t, org.APIKey, "replay", "--message", ids[0]))
	if one.ReplayOf != ids[0] || one.ID == ids[0] {
		t.Fatalf("replay --message: %+v", one)
	}
	out, stderr, err := s.runWithStderr(t, org.APIKey, "replay", "--endpoint", ep.ID, "--since", "2h", "--poll", "1ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "replayed 3 messages") || !strings.Contains(stderr, "3/3") {
		t.Fatalf("stdout %q stderr %q", out, stderr)
	}
	if _, err := s.run(t, org.APIKey, "replay", "--endpoint", ep.ID, "--since", "200h"); err == nil || !strings.Contains(err.Error(), "at most 7 days") {
		t.Fatalf("8-day window: %v", err)
	}
}

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		done, total int
		want        string
	}{{0, 10, "[..........] 0/10"}, {5, 10, "[#####.....] 5/10"}, {10, 10, "[##########] 10/10"}, {0, 0, "[##########] 0/0"}} {
		if got := progressBar(c.done, c.total, 10); got != c.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}

// keys create --role makes a key that may do what its role may; keys list
// shows each key's role, and a role the server does not know is refused.
func TestCLICreatesAKeyWithARoleAndListsIt(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	viewer := decodeOut[api.APIKey](t, s.mustRunJSON(t, org.APIKey, "keys", "create", "--role", "viewer"))
	if viewer.Role != "viewer" || viewer.Key == "" {
		t.Fatalf("keys create --role viewer: %+v", viewer)
	}
	out := s.mustRun(t, org.APIKey, "keys", "list")
	if !strings.Contains(out, "ROLE") || !regexp.MustCompile(viewer.Prefix+`\s+viewer\s`).MatchString(out) {
		t.Fatalf("keys list does not show the viewer's role:\n%s", out)
	}
	if out := s.mustRun(t, viewer.Key, "connections", "list"); !strings.Contains(out, "NAME") {
		t.Fatalf("a viewer cannot read: %q", out)
	}
	_, err := s.run(t, viewer.Key, "keys", "create")
	if err == nil || !strings.Contains(err.Error(), "needs the admin role") {
		t.Fatalf("a viewer made a key: %v", err)
	}
	if _, err := s.run(t, org.APIKey, "keys", "create", "--role", "owner"); err == nil || !strings.Contains(err.Error(), "role must be viewer, operator or admin") {
		t.Fatalf("an unknown role: %v", err)
	}
}

func TestCLIDeletesAnEndpointAndManagesKeys(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	if out := s.mustRun(t, org.APIKey, "endpoints", "delete", ep.ID); !strings.Contains(out, "deleted endpoint "+ep.ID) {
		t.Fatalf("delete: %q", out)
	}
	if _, err := s.run(t, org.APIKey, "endpoints", "show", ep.ID); err == nil {
		t.Fatal("a deleted endpoint is shown")
	}
	key := decodeOut[api.APIKey](t, s.mustRunJSON(t, org.APIKey, "keys", "create"))
	if key.Role != "admin" {
		t.Fatalf("a key made without --role is %q, want admin", key.Role)
	}
	if out := s.mustRun(t, key.Key, "keys", "list"); !strings.Contains(out, key.Prefix) || strings.Contains(out, key.Key) {
		t.Fatalf("keys list: %q", out)
	}
	s.mustRun(t, org.APIKey, "keys", "revoke", key.ID)
	if _, err := s.run(t, key.Key, "keys", "list"); err == nil {
		t.Fatal("a revoked key still works")
	}
	if out := s.mustRun(t, org.APIKey, "audit", "list"); !strings.Contains(out, "key.revoke") || !strings.Contains(out, "endpoint.delete") {
		t.Fatalf("audit list: %q", out)
	}
}

// keys create --name names a key; keys list shows the name.
func TestCLINamesAKeyAndListsItByName(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	k := decodeOut[api.APIKey](t, s.mustRunJSON(t, org.APIKey, "keys", "create", "--name", "deploy-bot"))
	if k.Name != "deploy-bot" {
		t.Fatalf("keys create --name: %+v", k)
	}
	out := s.mustRun(t, org.APIKey, "keys", "list")
	if !strings.Contains(out, "NAME") || !regexp.MustCompile(k.ID+`\s+deploy-bot\s`).MatchString(out) {
		t.Fatalf("keys list does not show the key's name:\n%s", out)
	}
	if _, err := s.run(t, org.APIKey, "keys", "create", "--name", strings.Repeat("n", 101)); err == nil || !strings.Contains(err.Error(), "at most 100 bytes") {
		t.Fatalf("a name of 101 bytes: %v", err)
	}
}

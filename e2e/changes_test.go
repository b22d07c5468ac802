package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// changeFixture is an org with a GitHub connection, endpoints to change
// and a second API key to revoke.
type changeFixture struct {
	orgID    string
	connID   string
	key      string
	keyID    string
	toChange struct{ id, path string } // disabled, then deleted
	toDelete struct{ id, path string }
	rotated  struct{ id, path string } // receives the webhooks of the rotation
}

func newChangeFixture(t *testing.T, s *server) *changeFixture {
	t.Helper()
	f := &changeFixture{}
	var org struct{ ID string }
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	f.orgID = org.ID
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "github", "name": "gh",
		"secrets": []string{githubSecret}}, &conn)
	f.connID = conn.ID
	for _, ep := range []*struct{ id, path string }{&f.toChange, &f.toDelete, &f.rotated} {
		var out struct{ ID, Token string }
		s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &out)
		ep.id, ep.path = out.ID, "/webhooks/"+out.Token
	}
	var key struct{ ID, Key string }
	s.api(t, "POST", "/api/v1/keys", map[string]any{"org_id": org.ID}, &key)
	f.keyID, f.key = key.ID, key.Key
	return f
}

var deliveries atomic.Int64

// post sends a GitHub delivery signed with secret and returns the status.
func post(t *testing.T, url, secret string) int {
	t.Helper()
	id := fmt.Sprintf("change-%d", deliveries.Add(1))
	body := fmt.Appendf(nil, `{"action":"opened","delivery":%q,"repository":{"node_id":"R_1"}}`, id)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return status(t, req)
}

// withKey calls GET /api/v1/orgs with an org's API key and returns the
// status.
func withKey(t *testing.T, s *server, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/v1/orgs", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	return status(t, req)
}

func status(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// newestSettled waits until the endpoint's newest of n messages settled and
// returns it.
func (s *server) newestSettled(t *testing.T, endpointID string, n int) message {
	t.Helper()
	var newest message
	eventually(t, 10*time.Second, "the newest message settled", func() bool {
		var page struct{ Items []message }
		s.api(t, "GET", "/api/v1/messages?limit=500&endpoint_id="+endpointID, nil, &page)
		if len(page.Items) < n {
			return false
		}
		newest = page.Items[0]
		return settled(newest.State)
	})
	return newest
}

// rotate replaces the connection's secrets through s with newSecret alone.
func (f *changeFixture) rotate(t *testing.T, s *server, newSecret string) {
	t.Helper()
	s.api(t, "PUT", "/api/v1/connections/"+f.connID+"/secrets", map[string]any{"secrets": []string{newSecret}}, nil)
}

func TestAnOperatorsChangeActsOnTheNextRequestToTheSameProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := start(t, t.TempDir())
	f := newChangeFixture(t, s)
	// Each is used once first, so the process holds it in its caches.
	for _, path := range []string{f.toChange.path, f.toDelete.path, f.rotated.path} {
		if code := post(t, s.url+path, githubSecret); code != http.StatusOK {
			t.Fatalf("before any change: %d", code)
		}
	}
	if m := s.newestSettled(t, f.rotated.id, 1); m.State != "processed" {
		t.Fatalf("before the rotation: %+v", m)
	}
	if code := withKey(t, s, f.key); code != http.StatusOK {
		t.Fatalf("the key before revoking: %d", code)
	}

	s.api(t, "PATCH", "/api/v1/endpoints/"+f.toChange.id, map[string]any{"enabled": false}, nil)
	if code := post(t, s.url+f.toChange.path, githubSecret); code != http.StatusNotFound {
		t.Fatalf("the request right after disabling: %d, want 404", code)
	}
	s.api(t, "DELETE", "/api/v1/endpoints/"+f.toDelete.id, nil, nil)
	if code := post(t, s.url+f.toDelete.path, githubSecret); code != http.StatusNotFound {
		t.Fatalf("the request right after deleting: %d, want 404", code)
	}
	s.api(t, "DELETE", "/api/v1/keys/"+f.keyID, nil, nil)
	if code := withKey(t, s, f.key); code != http.StatusUnauthorized {
		t.Fatalf("the key right after revoking: %d, want 401", code)
	}
	f.rotate(t, s, "rotated-secret")
	if code := post(t, s.url+f.rotated.path, githubSecret); code != http.StatusOK {
		t.Fatalf("post after rotating: %d", code)
	}
	if m := s.newestSettled(t, f.rotated.id, 2); m.State != "ignored" || m.Outcome != "signature" {
		t.Fatalf("signed with the retired secret right after rotating: %s %s", m.State, m.Outcome)
	}
	if code := post(t, s.url+f.rotated.path, "rotated-secret"); code != http.StatusOK {
		t.Fatalf("post after rotating: %d", code)
	}
	if m := s.newestSettled(t, f.rotated.id, 3); m.State != "processed" {
		t.Fatalf("signed with the new secret: %s %s", m.State, m.Outcome)
	}
}

func TestDeletingAnOrgStopsItsEndpointsAndKeysOnTheNextRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	s := start(t, t.TempDir())
	f := newChangeFixture(t, s)
	// Used once first, so the process holds the endpoint in its cache.
	if code := post(t, s.url+f.toChange.path, githubSecret); code != http.StatusOK {
		t.Fatalf("before the delete: %d", code)
	}
	if code := withKey(t, s, f.key); code != http.StatusOK {
		t.Fatalf("the key before the delete: %d", code)
	}
	var gone struct{ ID, Name string }
	s.api(t, "DELETE", "/api/v1/orgs/"+f.orgID, nil, &gone)
	if gone.ID != f.orgID || gone.Name != "acme" {
		t.Fatalf("DELETE answered %+v", gone)
	}
	if code := post(t, s.url+f.toChange.path, githubSecret); code != http.StatusNotFound {
		t.Fatalf("the request right after deleting its org: %d, want 404", code)
	}
	if code := withKey(t, s, f.key); code != http.StatusUnauthorized {
		t.Fatalf("the org's key right after the delete: %d, want 401", code)
	}
}

func TestAnOperatorsChangeThroughOneProcessActsOnAnotherWithinASecond(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	procs, _ := onePostgres(t, 2)
	a, b := procs[0], procs[1]
	f := newChangeFixture(t, a)
	// b uses each first, so it holds them in its caches.
	for _, path := range []string{f.toChange.path, f.toDelete.path, f.rotated.path} {
		if code := post(t, b.url+path, githubSecret); code != http.StatusOK {
			t.Fatalf("b before any change: %d", code)
		}
	}
	if m := b.newestSettled(t, f.rotated.id, 1); m.State != "processed" {
		t.Fatalf("before the rotation: %+v", m)
	}
	if code := withKey(t, b, f.key); code != http.StatusOK {
		t.Fatalf("the key on b before revoking: %d", code)
	}

	// A webhook b receives is processed by b; within a second of the
	// rotation through a, b must refuse the retired secret.
	f.rotate(t, a, "rotated-secret")
	rotated := time.Now()
	n := 1
	for {
		n++
		sent := time.Now()
		if code := post(t, b.url+f.rotated.path, githubSecret); code != http.StatusOK {
			t.Fatalf("post to b after rotating: %d", code)
		}
		m := b.newestSettled(t, f.rotated.id, n)
		if m.State == "ignored" && m.Outcome == "signature" {
			break
		}
		if sent.Sub(rotated) > time.Second {
			t.Fatalf("b still accepted the retired secret %v after the rotation: %s %s", sent.Sub(rotated), m.State, m.Outcome)
		}
	}
	if code := post(t, b.url+f.rotated.path, "rotated-secret"); code != http.StatusOK {
		t.Fatalf("post to b after rotating: %d", code)
	}
	if m := b.newestSettled(t, f.rotated.id, n+1); m.State != "processed" {
		t.Fatalf("signed with the new secret, on b: %s %s", m.State, m.Outcome)
	}

	a.api(t, "PATCH", "/api/v1/endpoints/"+f.toChange.id, map[string]any{"enabled": false}, nil)
	eventually(t, time.Second, "b answers 404 at the disabled endpoint", func() bool {
		return post(t, b.url+f.toChange.path, githubSecret) == http.StatusNotFound
	})
	a.api(t, "DELETE", "/api/v1/endpoints/"+f.toDelete.id, nil, nil)
	eventually(t, time.Second, "b answers 404 at the deleted endpoint", func() bool {
		return post(t, b.url+f.toDelete.path, githubSecret) == http.StatusNotFound
	})
	a.api(t, "DELETE", "/api/v1/keys/"+f.keyID, nil, nil)
	eventually(t, time.Second, "b answers 401 to the revoked key", func() bool {
		return withKey(t, b, f.key) == http.StatusUnauthorized
	})
}

package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// githubIssue is a signed GitHub issues webhook whose body is given.
func githubIssue(t *testing.T, url, id, body string) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write([]byte(body))
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
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
		t.Fatalf("webhook %s answered %d", id, resp.StatusCode)
	}
}

// TestAnEventTypesSchemaAndItsDriftReachTheCLIAndTheOrgsURL: on the real
// binary, webhooks of one type make its catalog entry and schema; one with
// a changed shape is recorded as changes that `intake event-types show`
// prints, the org's URL receives a schema.changed notification about the
// type, and the console shows the schema as a tree.
func TestAnEventTypesSchemaAndItsDriftReachTheCLIAndTheOrgsURL(t *testing.T) {
	var mu sync.Mutex
	var notes [][]byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes = append(notes, b)
		mu.Unlock()
	}))
	defer receiver.Close()

	s := start(t, t.TempDir(), "--notify-interval", "100ms")
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	s.cli(t, "notifications", "set", "--org", orgs.Items[0].ID, "--url", receiver.URL, "--topic", "schema.changed")

	for _, n := range []string{"1", "2", "3"} {
		githubIssue(t, s.url+path, "same-"+n, `{"action":"opened","issue":{"number":`+n+`,"title":"t`+n+`","created_at":"2026-11-30T12:00:0`+n+`Z"},"repository":{"node_id":"R_1"}}`)
	}
	type listed struct {
		Items []struct {
			Type         string
			ConnectionID string `json:"connection_id"`
			Total        int
		}
	}
	var list listed
	eventually(t, 30*time.Second, "the catalog counts the three events", func() bool {
		if err := json.Unmarshal([]byte(s.cli(t, "event-types", "list", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 1 && list.Items[0].Total == 3
	})
	if list.Items[0].Type != "github.issues.opened" {
		t.Fatalf("catalogued %+v", list.Items)
	}
	conn := list.Items[0].ConnectionID
	if out := s.cli(t, "event-types", "show", "github.issues.opened", "--connection", "gh"); !strings.Contains(out, "changes:\n  none") {
		t.Fatalf("before any drift, show prints:\n%s", out)
	}

	// The same type with its issue number a string and a label added.
	githubIssue(t, s.url+path, "drifted", `{"action":"opened","issue":{"number":"4","title":"t4","created_at":"2026-11-30T12:00:04Z","label":"bug"},"repository":{"node_id":"R_1"}}`)
	var out string
	eventually(t, 30*time.Second, "show prints the changes", func() bool {
		out = s.cli(t, "event-types", "show", "github.issues.opened", "--connection", "gh")
		return strings.Contains(out, "$.issue.label") && strings.Contains(out, "$.issue.number")
	})
	for _, want := range []string{"total:         4", "type_changed", "added", "integer", "created_at", "date-time", "required", "example (event "} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Schema     string `json:"$schema"`
		Properties map[string]struct {
			Properties map[string]struct {
				Type any
			}
		}
	}
	if err := json.Unmarshal([]byte(s.cli(t, "event-types", "show", "github.issues.opened", "--schema")), &doc); err != nil ||
		doc.Schema != "https://json-schema.org/draft/2020-12/schema" || doc.Properties["issue"].Properties["number"].Type == nil {
		t.Fatalf("--schema printed a document without the issue's number (%v): %+v", err, doc)
	}

	eventually(t, 30*time.Second, "the org's URL receives schema.changed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) > 0
	})
	mu.Lock()
	var note struct{ Type, Subject, Detail string }
	err := json.Unmarshal(notes[0], &note)
	mu.Unlock()
	if err != nil || note.Type != "schema.changed" || note.Subject != conn+"/github.issues.opened" ||
		!strings.Contains(note.Detail, "$.issue.number type changed from integer to string") {
		t.Fatalf("notification %+v (%v)", note, err)
	}

	// The console lists the type and shows its schema as a tree.
	tab := browserTab(t)
	signIn(t, tab, s.url, staffToken, "header.top")
	step(t, tab, "open the event types",
		chromedp.Navigate(s.url+"/console/event-types"),
		chromedp.WaitVisible(chromedp.ID("event-types")),
		chromedp.Click(chromedp.CSS(`#event-types a.mono`)),
		chromedp.WaitVisible(chromedp.ID("schema-tree")),
	)
	tree := read(t, tab, "the schema tree", chromedp.Text(chromedp.ID("schema-tree")))
	changes := read(t, tab, "the changes", chromedp.Text(chromedp.ID("changes")))
	if !strings.Contains(tree, "number") || !strings.Contains(tree, "date-time") || !strings.Contains(changes, "$.issue.label") {
		t.Fatalf("the page shows tree %q, changes %q", tree, changes)
	}
}

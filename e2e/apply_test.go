package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/intakehq/intake/control"
)

// configFile is an org managed as code: every setting written out, so the
// export can be compared with it field by field.
const configFile = `orgs:
  - name: acme
    retention: 720h
    connections:
      - name: gh
        provider: github
        secrets:
          - ${env:E2E_GITHUB_SECRET}
        filter: event.type.startsWith("github.")
        endpoints:
          - name: primary
            enabled: true
            max_body_bytes: 1048576
            rate_per_sec: 0
            burst: 1000
          - name: secondary
            enabled: true
            max_body_bytes: 65536
            rate_per_sec: 5
            burst: 10
    consumers:
      - name: chat
        app: chat
        url: %s
        event_types:
          - github.*
        enabled: true
        filter: event.data.delivery != "skip-me"
`

// TestApplyEditReapplyAndExportRoundTripThroughTheBinary: a file applied
// from the CLI makes a working org (a webhook reaches the consumer it
// names); an edited file's dry run shows the changes and writes nothing;
// applied, it makes them; applied again it changes nothing; and the export
// is the applied file but for its secrets.
func TestApplyEditReapplyAndExportRoundTripThroughTheBinary(t *testing.T) {
	received := make(chan string, 8)
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- string(b)
	}))
	defer consumer.Close()
	s := start(t, t.TempDir())
	t.Setenv("E2E_GITHUB_SECRET", githubSecret)
	dir := t.TempDir()
	file := filepath.Join(dir, "intake.yaml")
	first := fmt.Sprintf(configFile, consumer.URL+"/chat")
	if err := os.WriteFile(file, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}

	var plan control.Plan
	if err := json.Unmarshal([]byte(s.cli(t, "apply", "-f", file, "--json")), &plan); err != nil {
		t.Fatal(err)
	}
	var url string
	for _, c := range plan.Changes {
		if c.Action != control.ActionCreate {
			t.Fatalf("first apply: %+v", c)
		}
		if c.Kind == "endpoint" && c.Name == "primary" && strings.HasSuffix(c.URL, "/webhooks/"+c.Token) {
			url = s.url + "/webhooks/" + c.Token
		}
	}
	if len(plan.Changes) != 5 || !strings.Contains(url, "/webhooks/") {
		t.Fatalf("first apply: %+v", plan.Changes)
	}
	resp, err := http.DefaultClient.Do(githubDelivery(url, "applied"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case body := <-received:
		if !strings.Contains(body, `"applied"`) {
			t.Fatalf("the consumer received %s", body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a webhook to the applied endpoint never reached the applied consumer")
	}

	// The edit: another filter, one more consumer, one endpoint fewer.
	edited := strings.Replace(first, `!= "skip-me"`, `!= "skip-you"`, 1)
	edited = strings.Replace(edited, `          - name: secondary
            enabled: true
            max_body_bytes: 65536
            rate_per_sec: 5
            burst: 10
`, "", 1)
	edited += fmt.Sprintf(`      - name: archive
        app: archive
        url: %s/archive
        event_types:
          - '*'
        enabled: true
`, consumer.URL)
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	auditBefore := s.auditCount(t)
	dry := s.cli(t, "apply", "-f", file, "--prune", "--dry-run")
	for _, want := range []string{
		"~ update    consumer   acme/chat: filter",
		"+ create    consumer   acme/archive",
		"- delete    endpoint   acme/gh/secondary",
		"= unchanged endpoint   acme/gh/primary",
		"1 to create, 1 to update, 1 to delete, 3 unchanged: planned (dry run: nothing written).",
	} {
		if !strings.Contains(dry, want) {
			t.Fatalf("the dry run lacks %q:\n%s", want, dry)
		}
	}
	if n := s.auditCount(t); n != auditBefore {
		t.Fatalf("the dry run wrote %d audit entries", n-auditBefore)
	}
	var eps struct{ Items []struct{ Name string } }
	if s.api(t, "GET", "/api/v1/endpoints", nil, &eps); len(eps.Items) != 2 {
		t.Fatalf("after the dry run %d endpoints, want both still", len(eps.Items))
	}

	out := s.cli(t, "apply", "-f", file, "--prune")
	if !strings.Contains(out, "1 to create, 1 to update, 1 to delete, 3 unchanged: made.") || !strings.Contains(out, "signing secret: whsec_") {
		t.Fatalf("applying the edit:\n%s", out)
	}
	if s.api(t, "GET", "/api/v1/endpoints", nil, &eps); len(eps.Items) != 1 || eps.Items[0].Name != "primary" {
		t.Fatalf("after the edit the endpoints are %+v", eps.Items)
	}
	if n := s.auditCount(t); n != auditBefore+3 {
		t.Fatalf("the edit wrote %d audit entries, want 3 (one per change)", n-auditBefore)
	}

	again := s.cli(t, "apply", "-f", file, "--prune")
	if !strings.HasPrefix(again, "No changes: the server already holds what intake.yaml declares (5 unchanged).") {
		t.Fatalf("applying the same file again:\n%s", again)
	}

	exported := s.cli(t, "export")
	if strings.Contains(exported, githubSecret) || !strings.Contains(exported, "${env:ACME_GH_SECRET}") {
		t.Fatalf("the export shows the secret or no placeholder:\n%s", exported)
	}
	applied, got := decodeConfig(t, edited), decodeConfig(t, exported)
	got.Orgs[0].Connections[0].Secrets = applied.Orgs[0].Connections[0].Secrets
	if !reflect.DeepEqual(applied, got) {
		t.Fatalf("the export differs from the applied file but for secrets:\napplied:\n%s\nexported:\n%s", edited, exported)
	}
}

func decodeConfig(t *testing.T, src string) control.Document {
	t.Helper()
	var doc control.Document
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v:\n%s", err, src)
	}
	return doc
}

// auditCount is how many operator actions the audit log holds.
func (s *server) auditCount(t *testing.T) int {
	t.Helper()
	var page struct {
		Items      []json.RawMessage
		NextCursor string `json:"next_cursor"`
	}
	s.api(t, "GET", "/api/v1/audit?limit=200", nil, &page)
	if page.NextCursor != "" {
		t.Fatal("more than a page of audit entries")
	}
	return len(page.Items)
}

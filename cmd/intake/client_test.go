package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
)

const staffToken = "cli-test-staff-token"

// server is the real admin API over a real SQLite store.
type server struct {
	url   string
	store *sqlite.Store
}

func newServer(t *testing.T) server {
	t.Helper()
	return newServerWith(t, 0)
}

// newServerWith is newServer with the --bulk-max given (0: the default).
func newServerWith(t *testing.T, bulkMax int) server {
	t.Helper()
	t.Setenv("INTAKE_URL", "")
	t.Setenv("INTAKE_TOKEN", "")
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer := testkit.Sealer(t)
	srv := httptest.NewServer(nil)
	ctl := control.New(control.Config{Store: st, Sealer: sealer, StaffToken: staffToken, PublicURL: srv.URL,
		ConsumerPolicy: delivery.DefaultPolicy(), BulkMax: bulkMax})
	srv.Config.Handler = api.New(api.Config{Control: ctl, Wakes: st, PublicURL: srv.URL}).Handler()
	t.Cleanup(srv.Close)
	// The replay runner every `intake serve` runs beside its API.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner := ctl.Runner(nil)
		runner.Poll = 10 * time.Millisecond
		_ = runner.Run(ctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	return server{url: srv.URL, store: st}
}

// run parses args as main does and runs the command, returning what it
// printed to stdout.
func (s server) run(t *testing.T, tok string, args ...string) (string, error) {
	t.Helper()
	out, _, err := s.runWithStderr(t, tok, args...)
	return out, err
}

// runWithStderr runs a command as run does, returning what it printed to
// stdout and to stderr.
func (s server) runWithStderr(t *testing.T, tok string, args ...string) (string, string, error) {
	t.Helper()
	var cli CLI
	var out, errOut bytes.Buffer
	cli.Client.out = &out
	cli.Client.errOut = &errOut
	parser, err := kong.New(&cli, kong.Name("intake"), kong.Exit(func(code int) { t.Fatalf("intake %v exited %d", args, code) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := parser.Parse(append([]string{"--server", s.url, "--token", tok}, args...))
	if err != nil {
		t.Fatalf("intake %v: %v", args, err)
	}
	err = ctx.Run(&cli.Client)
	return out.String(), errOut.String(), err
}

// mustRun runs a command that must succeed.
func (s server) mustRun(t *testing.T, tok string, args ...string) string {
	t.Helper()
	out, err := s.run(t, tok, args...)
	if err != nil {
		t.Fatalf("intake %v: %v", args, err)
	}
	return out
}

// decodeOut decodes a command's JSON output.
func decodeOut[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not the JSON wanted: %v\n%s", err, out)
	}
	return v
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// table splits a table's output into lines of whitespace-separated cells,
// checking that every cell of a column starts where its header does.
func table(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var starts []int
	for i, r := range header {
		if r != ' ' && (i == 0 || header[i-1] == ' ' && header[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	var rows [][]string
	for _, l := range lines {
		for _, s := range starts {
			if s > 0 && (len(l) <= s || l[s-1] != ' ' || l[s] == ' ') {
				t.Fatalf("columns are not aligned at %d:\n%s", s, out)
			}
		}
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestCLISetsUpAnOrgConnectionAndEndpointThroughTheAPI(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "Acme Corp"))
	if org.ID == "" || org.Name != "Acme Corp" || !strings.HasPrefix(org.APIKey, "ik_") {
		t.Fatalf("org: %+v", org)
	}
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, staffToken, "connections", "create", "--org", org.ID,
		"--provider", "stripe", "--name", "live", "--secret", "whsec_a,with,commas", "--secret", "whsec_b", "--config", `{"tolerance":"5m"}`))
	if conn.OrgID != org.ID || conn.Provider != "stripe" || conn.SecretCount == nil || *conn.SecretCount != 2 || compact(t, conn.Config) != `{"tolerance":"5m"}` {
		t.Fatalf("connection: %+v", conn)
	}
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID, "--rate-per-sec", "0", "--max-body-bytes", "4096"))
	if ep.Token == "" || ep.URL != s.url+"/webhooks/"+ep.Token || ep.RatePerSec != 0 || ep.MaxBodyBytes != 4096 || ep.Burst != intake.DefaultBurst || !ep.Enabled {
		t.Fatalf("endpoint: %+v", ep)
	}

	shown := s.mustRunJSON(t, org.APIKey, "connections", "show", conn.ID)
	if strings.Contains(shown, "whsec_") || decodeOut[api.Connection](t, shown).ID != conn.ID {
		t.Fatalf("connections show: %s", shown)
	}
	if got := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "disable", ep.ID)); got.Enabled || got.MaxBodyBytes != 4096 {
		t.Fatalf("after disable: %+v", got)
	}
	if got := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "show", ep.ID)); got.Enabled || got.Token != "" {
		t.Fatalf("endpoints show: %+v", got)
	}
	if got := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "enable", ep.ID)); !got.Enabled {
		t.Fatalf("after enable: %+v", got)
	}
}

func TestCLIListsPrintAlignedTablesOrJSON(t *testing.T) {
	s := newServer(t)
	acme := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	globex := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "globex industries"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, acme.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, acme.APIKey, "endpoints", "create", "--connection", conn.ID, "--rate-per-sec", "0"))

	rows := table(t, s.mustRun(t, staffToken, "orgs", "list"))
	if strings.Join(rows[0], " ") != "ID NAME CREATED" || len(rows) != 3 || rows[1][0] != acme.ID || rows[2][0] != globex.ID {
		t.Fatalf("orgs table: %q", rows)
	}
	list := decodeOut[api.List[api.Org]](t, s.mustRunJSON(t, acme.APIKey, "orgs", "list", "--json"))
	if len(list.Items) != 1 || list.Items[0].ID != acme.ID {
		t.Fatalf("orgs --json with acme's key: %+v", list)
	}

	rows = table(t, s.mustRun(t, acme.APIKey, "connections", "list"))
	if len(rows) != 2 || rows[1][0] != conn.ID || rows[1][2] != "none" || rows[1][3] != "open" || rows[1][4] != "0" {
		t.Fatalf("connections table: %q", rows)
	}
	rows = table(t, s.mustRun(t, acme.APIKey, "endpoints", "list"))
	if len(rows) != 2 || rows[1][0] != ep.ID || rows[1][1] != "-" || rows[1][4] != "true" || rows[1][6] != "unlimited" {
		t.Fatalf("endpoints table: %q", rows)
	}
	if got := s.mustRun(t, globex.APIKey, "endpoints", "list", "--json"); decodeOut[api.List[api.Endpoint]](t, got).Items == nil || strings.Contains(got, ep.ID) {
		t.Fatalf("globex lists acme's endpoint: %s", got)
	}
}

func TestCLIShowsListsAndDumpsMessages(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	body := "\x00raw \xffbody\n"
	var ids []string
	for i := 0; i < 3; i++ {
		sum := sha256.Sum256([]byte(body))
		m := intake.Message{
			ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
			Header: http.Header{"Authorization": {"Bearer leaked"}, "Content-Type": {"application/octet-stream"}},
			Body:   []byte(body), Digest: hex.EncodeToString(sum[:]), ReceivedAt: time.Now().UTC(),
			State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: time.Now(),
		}
		if err := s.store.Ingest(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}

	out := s.mustRun(t, org.APIKey, "messages", "list", "--endpoint", ep.ID, "--state", "queued", "--limit", "2")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	rows := table(t, strings.Join(lines[:len(lines)-1], "\n"))
	if len(rows) != 3 || rows[1][0] != ids[2] || rows[2][0] != ids[1] || rows[1][3] != "queued" || strings.Join(rows[1][4:7], " ") != "0 of 6" {
		t.Fatalf("messages table: %s", out)
	}
	if want := "more: --cursor " + ids[1]; lines[len(lines)-1] != want {
		t.Fatalf("last line %q, want %q", lines[len(lines)-1], want)
	}
	page := decodeOut[api.List[api.Message]](t, s.mustRunJSON(t, org.APIKey, "messages", "list", "--json", "--cursor", ids[1]))
	if len(page.Items) != 1 || page.Items[0].ID != ids[0] {
		t.Fatalf("second page: %+v", page)
	}

	shown := s.mustRunJSON(t, org.APIKey, "messages", "show", ids[0])
	if m := decodeOut[api.MessageDetail](t, shown); m.ID != ids[0] || m.Headers.Get("Content-Type") == "" || strings.Contains(shown, "leaked") {
		t.Fatalf("messages show: %s", shown)
	}
	if got := s.mustRun(t, org.APIKey, "messages", "body", ids[0]); got != body {
		t.Fatalf("messages body = %q, want %q", got, body)
	}
}

func TestCLIReturnsTheAPIErrorMessage(t *testing.T) {
	s := newServer(t)
	cases := []struct {
		tok  string
		args []string
		want string
	}{
		{"", []string{"orgs", "list"}, "set --token or INTAKE_TOKEN"},
		{"wrong", []string{"orgs", "list"}, "invalid token"},
		{staffToken, []string{"connections", "show", "nope"}, `malformed id "nope"`},
		{staffToken, []string{"endpoints", "show", intake.NewID()}, "not found"},
		{staffToken, []string{"connections", "create", "--provider", "stripe", "--name", "x", "--secret", "s"}, "org_id is required"},
		{staffToken, []string{"connections", "create", "--provider", "stripe", "--name", "x", "--config", "{"}, "--config must be a JSON object"},
		{staffToken, []string{"messages", "list", "--state", "lost"}, "state must be one of"},
		{staffToken, []string{"consumers", "add", "--org", intake.NewID(), "--name", "x", "--app", "a", "--url", "http://127.0.0.1/", "--event-type", "stripe.*.paid"}, "* may only end a pattern"},
		{staffToken, []string{"consumers", "add", "--org", intake.NewID(), "--name", "x", "--app", "a", "--url", "http://169.254.169.254/", "--event-type", "*"}, "refused by the consumer address policy"},
		{staffToken, []string{"consumers", "disable", intake.NewID()}, "not found"},
		{staffToken, []string{"links", "add", "--connection", intake.NewID(), "--object", "o", "--app", "a", "--record", "r"}, "not found"},
		{staffToken, []string{"events", "show", "nope"}, `malformed id "nope"`},
	}
	for _, c := range cases {
		out, err := s.run(t, c.tok, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("intake %v: %v (printed %q), want an error mentioning %q", c.args, err, out, c.want)
		}
	}
}

func TestCLIReportsAnUnreachableServer(t *testing.T) {
	s := newServer(t)
	s.url = "http://127.0.0.1:1"
	if _, err := s.run(t, staffToken, "orgs", "list"); err == nil || !strings.Contains(err.Error(), "cannot reach http://127.0.0.1:1") {
		t.Fatalf("err = %v", err)
	}
}

func TestCLIAdoptsAnAsanaHandshakeSecret(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "asana", "--name", "tasks"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID))
	now := time.Now().UTC()
	m := &intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
		Header: http.Header{"X-Hook-Secret": {"asana-handshake-secret"}}, Body: []byte{}, Digest: "d", ReceivedAt: now,
		State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now}
	if err := s.store.Ingest(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	out := s.mustRunJSON(t, org.APIKey, "connections", "adopt-secret", conn.ID, "--message", m.ID)
	if got := decodeOut[api.Connection](t, out); got.SecretCount == nil || *got.SecretCount != 1 || strings.Contains(out, "asana-handshake-secret") {
		t.Fatalf("adopt-secret printed %s", out)
	}
}

// TestMessagesListShowsTheIgnoreReasonAndNames: a message ignored for its
// signature shows why in ERROR, and its connection and endpoint go by
// their names.
func TestMessagesListShowsTheIgnoreReasonAndNames(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, org.APIKey, "endpoints", "create", "--connection", conn.ID, "--name", "primary"))
	now := time.Now().UTC()
	m := intake.Message{ID: intake.NewID(), OrgID: org.ID, ConnectionID: conn.ID, EndpointID: ep.ID, Method: "POST",
		Body: []byte("{}"), Digest: "d", ReceivedAt: now, State: intake.MessageQueued, MaxAttempts: intake.DefaultMaxAttempts, NextAttemptAt: now}
	if err := s.store.Ingest(ctx, &m); err != nil {
		t.Fatal(err)
	}
	claims, err := s.store.ClaimMessages(ctx, now.Add(time.Second), time.Minute, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v %v", claims, err)
	}
	if _, err := s.store.SettleMessage(ctx, now.Add(time.Second), intake.Settlement{MessageID: m.ID, Attempt: claims[0].Attempt,
		To: intake.MessageIgnored, Outcome: intake.OutcomeSignature, ErrorMessage: "signature: no secret matched"}); err != nil {
		t.Fatal(err)
	}
	out := s.mustRun(t, org.APIKey, "messages", "list")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "ERROR") || !strings.Contains(lines[0], "CONNECTION") {
		t.Fatalf("messages table:\n%s", out)
	}
	for _, want := range []string{"ignored", "signature: no secret matched", "  open  ", "primary"} {
		if !strings.Contains(lines[1], want) {
			t.Fatalf("row lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(lines[1], ep.ID) || strings.Contains(lines[1], conn.ID) {
		t.Fatalf("the row names the endpoint or connection by id:\n%s", out)
	}
}

// mustRunJSON runs a command that must succeed with --json, for a test that
// decodes its answer.
func (s server) mustRunJSON(t *testing.T, tok string, args ...string) string {
	t.Helper()
	if !slices.Contains(args, "--json") {
		args = append(args, "--json")
	}
	return s.mustRun(t, tok, args...)
}

// keyValues reads a command's key: value lines, checking that every value
// starts in one column.
func keyValues(t *testing.T, out string) map[string]string {
	t.Helper()
	kv := map[string]string{}
	col := -1
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			break // the tables after the lines
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		rest := strings.TrimLeft(v, " ")
		if rest == "" {
			continue // multi-line text follows
		}
		if at := len(line) - len(rest); col == -1 {
			col = at
		} else if at != col {
			t.Fatalf("values are not aligned (%d, %d):\n%s", col, at, out)
		}
		kv[k] = rest
	}
	return kv
}

// TestCLIShowPrintsKeyValueLinesAndJSONOnRequest: show prints aligned
// key: value lines (nested settings under dotted keys, a script indented
// below its key) and the server's JSON with --json.
func TestCLIShowPrintsKeyValueLinesAndJSONOnRequest(t *testing.T) {
	s := newServer(t)
	org := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	script := "function interpret(request) {\n  return [];\n}\n"
	cfg, _ := json.Marshal(map[string]any{"header": "X-Sig", "script": script})
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, org.APIKey, "connections", "create", "--provider", "hmac", "--name", "inventory",
		"--secret", "inv-secret", "--config", string(cfg)))

	out := s.mustRun(t, org.APIKey, "connections", "show", conn.ID)
	kv := keyValues(t, out)
	if kv["id"] != conn.ID || kv["name"] != "inventory" || kv["provider"] != "hmac" || kv["config.header"] != "X-Sig" || kv["secret_count"] != "1" || kv["filter"] != "-" {
		t.Fatalf("connections show:\n%s", out)
	}
	if !strings.Contains(out, "config.script:\n    function interpret(request) {\n      return [];\n    }\n") {
		t.Fatalf("the script is not shown as code below its key:\n%s", out)
	}
	if strings.Contains(out, "inv-secret") || strings.Contains(out, `\n`) {
		t.Fatalf("connections show:\n%s", out)
	}
	if got := decodeOut[api.Connection](t, s.mustRun(t, org.APIKey, "connections", "show", conn.ID, "--json")); got.ID != conn.ID {
		t.Fatalf("--json: %+v", got)
	}
}

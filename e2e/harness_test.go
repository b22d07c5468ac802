// Package e2e tests the real intake binary as users run it: built from
// source, started as a process, spoken to over HTTP, killed without notice.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "intake-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "intake")
	build := exec.Command("go", "build", "-o", binary, "github.com/intakehq/intake/cmd/intake")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const staffToken = "ist_e2e-staff-token"

// server is one running intake process.
type server struct {
	cmd     *exec.Cmd
	url     string
	done    chan struct{}
	logs    *logBuffer
	serving chan string // the address, once it logs that it serves
}

// start runs `intake serve` on a free port over data and waits until it
// logs that it is serving.
func start(t *testing.T, data string, extra ...string) *server {
	t.Helper()
	s := launch(t, nil, data, extra...)
	s.waitServing(t)
	return s
}

// launch starts `intake serve` on a free port over data, with env added to
// its environment, and returns without waiting for it to serve.
func launch(t *testing.T, env []string, data string, extra ...string) *server {
	t.Helper()
	return launchBinary(t, binary, env, data, extra...)
}

// launchBinary is launch with another build of intake (a previous release).
func launchBinary(t *testing.T, binary string, env []string, data string, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-format", "json", "--retry-base", "50ms", "--lease", "2s"}, extra...)
	if onPostgres() && !slices.Contains(extra, "--db") {
		args = append(args, "--db", databaseFor(t, data))
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "INTAKE_ADMIN_TOKEN="+staffToken), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), logs: &logBuffer{}, serving: make(chan string, 1)}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Bytes()
			s.logs.Write(append(line, '\n'))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "intake serving" {
				s.serving <- rec.Addr
			} else if m := textServing.FindSubmatch(line); m != nil {
				s.serving <- string(m[1])
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	// Every line is read before the process counts as done, so s.logs
	// holds them all once s.done is closed; it may be read at any time.
	go func() { <-logged; cmd.Wait(); close(s.done) }()
	t.Cleanup(s.kill)
	return s
}

// logBuffer is a process's log so far, written by the goroutine reading
// its stderr while a test reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// textServing finds the address in the line `--log-format text` logs once
// it serves.
var textServing = regexp.MustCompile(`msg="intake serving" addr=(\S+)`)

// onPostgres reports whether the suite runs every server on PostgreSQL
// (INTAKE_E2E_STORE=postgres) instead of the embedded store.
func onPostgres() bool { return os.Getenv("INTAKE_E2E_STORE") == "postgres" }

// skipOnPostgres skips a test about the embedded store's own files.
func skipOnPostgres(t *testing.T, why string) {
	t.Helper()
	if onPostgres() {
		t.Skip("the embedded store only: " + why)
	}
}

var (
	databasesMu sync.Mutex
	databases   = map[string]string{} // data directory → its fresh database
)

// databaseFor gives each data directory a fresh database of its own, the
// same one on every restart over that directory.
func databaseFor(t *testing.T, data string) string {
	databasesMu.Lock()
	defer databasesMu.Unlock()
	if url, ok := databases[data]; ok {
		return url
	}
	url := pgtest.Database(t)
	databases[data] = url
	return url
}

// waitServing waits until s logs that it is serving.
func (s *server) waitServing(t *testing.T) {
	t.Helper()
	select {
	case a := <-s.serving:
		s.url = "http://" + a
	case <-s.done:
		t.Fatalf("intake exited before serving:\n%s", s.logs)
	case <-time.After(30 * time.Second):
		s.kill()
		t.Fatal("intake did not start in 30s")
	}
}

func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// api calls the admin API with the staff token and decodes the answer.
func (s *server) api(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	status, b := s.send(t, method, path, in)
	if status >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return status
}

// send calls the admin API with the staff token, failing the test only
// when no answer comes.
func (s *server) send(t *testing.T, method, path string, in any) (int, []byte) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, body)
	req.Header.Set("Authorization", "Bearer "+staffToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type message struct {
	ID              string `json:"id"`
	State           string `json:"state"`
	Attempt         int    `json:"attempt"`
	ProviderEventID string `json:"provider_event_id"`
	Outcome         string `json:"outcome"`
}

type event struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	State     string `json:"state"`
	MessageID string `json:"message_id"`
}

// messages lists every message of the server, all pages.
func (s *server) messages(t *testing.T) []message {
	t.Helper()
	var all []message
	cursor := ""
	for {
		var page struct {
			Items      []message `json:"items"`
			NextCursor string    `json:"next_cursor"`
		}
		s.api(t, "GET", "/api/v1/messages?limit=500&cursor="+cursor, nil, &page)
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// events lists every event of the server, all pages.
func (s *server) events(t *testing.T) []event {
	t.Helper()
	evs, _ := s.listEvents(t, false)
	return evs
}

// allDelivered reports whether every event is delivered, for a poll while
// the store's link may still be recovering from a fault: a list answered
// 503 (storage unavailable for a moment, which the API tells its callers
// to retry) is "not yet"; any other failure fails the test.
func (s *server) allDelivered(t *testing.T) bool {
	t.Helper()
	evs, ok := s.listEvents(t, true)
	for _, e := range evs {
		if e.State != "delivered" {
			return false
		}
	}
	return ok
}

// listEvents lists every event; with unavailableOK a 503 ends it with ok
// false rather than failing the test.
func (s *server) listEvents(t *testing.T, unavailableOK bool) (all []event, ok bool) {
	t.Helper()
	cursor := ""
	for {
		path := "/api/v1/events?limit=500&cursor=" + cursor
		status, b := s.send(t, "GET", path, nil)
		if status == http.StatusServiceUnavailable && unavailableOK {
			return nil, false
		}
		if status >= 300 {
			t.Fatalf("GET %s: %d %s", path, status, b)
		}
		var page struct {
			Items      []event `json:"items"`
			NextCursor string  `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, true
		}
		cursor = page.NextCursor
	}
}

// eventually polls cond until it holds or the deadline passes: the process
// under test has no other way to tell us its state changed.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// settledMessages waits until every stored message has settled and
// returns them all.
func (s *server) settledMessages(t *testing.T) []message {
	t.Helper()
	var msgs []message
	eventually(t, 60*time.Second, "every stored message settled", func() bool {
		msgs = s.messages(t)
		for _, m := range msgs {
			if !settled(m.State) {
				return false
			}
		}
		return true
	})
	return msgs
}

func settled(state string) bool {
	return strings.Contains(" processed ignored dead ", " "+state+" ")
}

package inboxcheck

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/inbox"
	"github.com/intakehq/intake/internal/testkit"
)

// TestMain also runs the crashing receiver: this test binary started
// again with INBOX_TEST_RECEIVER set serves the inbox over the database
// named there, and exits the moment a delivery's transaction committed,
// before it answers.
func TestMain(m *testing.M) {
	if spec := os.Getenv("INBOX_TEST_RECEIVER"); spec != "" {
		os.Exit(crashingReceiver(spec))
	}
	os.Exit(m.Run())
}

// crashExit is the receiver's exit status when it dies after a commit.
const crashExit = 3

// crashingReceiver serves the ledger's inbox on a free port, prints the
// port, and exits with crashExit the moment the database committed the
// first delivery's transaction, inside its Commit: before the inbox can
// answer.
func crashingReceiver(spec string) int {
	var d testDB
	if err := json.Unmarshal([]byte(spec), &struct {
		Dialect *string
		Driver  *string
		DSN     *string
	}{&d.dialect, &d.driver, &d.dsn}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db, err := sql.Open(d.driver, d.dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d.db = db
	l := &ledger{d: d}
	crashing := sql.OpenDB(hookedConnector{drv: db.Driver(), dsn: d.dsn, onCommit: func() { os.Exit(crashExit) }})
	h, err := inbox.New(crashing, l.apply, inbox.Options{Secrets: []string{testSecret}, Dialect: d.dialect})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	fmt.Fprintln(os.Stderr, http.Serve(ln, h))
	return 1
}

// The receiver process dies after its transaction committed and before it
// answered: intake sees no answer and retries, and the retry, taken by the
// restarted application, is answered 2xx without applying the event again.
func TestACrashAfterTheCommitIsAnsweredOnRetryWithoutApplyingAgain(t *testing.T) {
	eachDatabase(t, func(t *testing.T, d testDB) {
		l := newLedger(t, d)
		spec, _ := json.Marshal(map[string]string{"Dialect": d.dialect, "Driver": d.driver, "DSN": d.dsn})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "INBOX_TEST_RECEIVER="+string(spec))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		addr, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("the receiver did not start: %v\n%s", err, stderr.String())
		}

		env := sample("evt-crash", "stripe.invoice.paid")
		body, _ := json.Marshal(env)
		r := signedRequest(t, testSecret, env.ID, body, time.Now())
		r.RequestURI = ""
		r.URL.Scheme, r.URL.Host = "http", strings.TrimSpace(addr)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(r)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("the receiver answered %d; it was to die after the commit", resp.StatusCode)
		}
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != crashExit {
			t.Fatalf("the receiver ended with %v, want exit %d\n%s", err, crashExit, stderr.String())
		}
		if d.applied(t, env.ID) != 1 || d.records(t) != 1 {
			t.Fatalf("after the crash: applied %d times, %d records; the commit should have kept 1 and 1", d.applied(t, env.ID), d.records(t))
		}

		restarted := l.handlerOn(t, d.reopen(t), testkit.NewClock(time.Now()))
		if a := deliver(t, restarted, env, time.Now()); a.status != http.StatusOK || a.body["duplicate"] != true {
			t.Fatalf("intake's retry after the crash: answered %d %s", a.status, a.raw)
		}
		if l.calls.Load() != 0 || d.applied(t, env.ID) != 1 {
			t.Fatalf("the retry applied the event again: %d calls, applied %d times", l.calls.Load(), d.applied(t, env.ID))
		}
	})
}

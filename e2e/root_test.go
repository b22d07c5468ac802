package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBareAddressLeadsToTheConsoleAndTheStartLogNamesIt: a person who opens
// the server's address, or reads its first lines, finds the console.
func TestBareAddressLeadsToTheConsoleAndTheStartLogNamesIt(t *testing.T) {
	s := start(t, t.TempDir())
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("GET / = %s, Location %q; want 302 to /console/", resp.Status, resp.Header.Get("Location"))
	}
	if code, _ := get(t, s.url+"/no-such-page"); code != http.StatusNotFound {
		t.Fatalf("GET /no-such-page = %d, want 404", code)
	}
	// The log is read once the process is done writing it.
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(60 * time.Second): // a hang guard
		t.Fatal("intake did not stop on SIGTERM")
	}
	for line := range strings.Lines(s.logs.String()) {
		var rec struct{ Msg, Console string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "intake serving" {
			if rec.Console != s.url+"/console/" {
				t.Fatalf("the start log names the console %q, want %q", rec.Console, s.url+"/console/")
			}
			return
		}
	}
	t.Fatalf("no start line:\n%s", s.logs.String())
}

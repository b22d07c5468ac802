package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// ownCluster is a PostgreSQL cluster of the test's own, on a directory it
// chooses (a small tmpfs), run by the postgres user with the machine's
// PostgreSQL binaries.
type ownCluster struct {
	bin, data, url string
	port           int
}

func startOwnCluster(t *testing.T, dir string, settings ...string) *ownCluster {
	t.Helper()
	c := newOwnCluster(t, dir, "pg")
	// WAL segments of 1 MB, so a full disk is met within a few hundred
	// webhooks rather than after a 16 MB segment is used up.
	c.run(t, "initdb", "-D", c.data, "-A", "trust", "-U", "postgres", "--wal-segsize=1")
	c.start(t, settings...)
	return c
}

// newOwnCluster is a cluster whose data directory is dir/name, on a free
// port, not yet made; it is stopped when the test ends.
func newOwnCluster(t *testing.T, dir, name string) *ownCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	pg, err := user.Lookup("postgres")
	if len(bins) == 0 || err != nil {
		t.Fatalf("this test runs a PostgreSQL cluster of its own: no /usr/lib/postgresql/*/bin/pg_ctl or postgres user (%v)", err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	// The test's temporary directories are the runner's alone: the
	// postgres user needs to pass through them to reach dir.
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := &ownCluster{bin: filepath.Dir(bins[len(bins)-1]), data: filepath.Join(dir, name), port: port,
		url: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	t.Cleanup(func() { c.pgctl("stop", "-m", "immediate") })
	return c
}

func (c *ownCluster) run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, name)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// pgctl runs pg_ctl on the cluster, its server's output to a log beside
// its data directory (pg.log for dir/pg), for at most a minute.
func (c *ownCluster) pgctl(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"-u", "postgres", "--", filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-w",
		"-l", c.data + ".log"}, args...)
	return exec.CommandContext(ctx, "runuser", args...).CombinedOutput()
}

// start starts the cluster, with settings (name=value) beside the test's
// own.
func (c *ownCluster) start(t *testing.T, settings ...string) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c min_wal_size=2MB -c max_wal_size=4MB", c.port, filepath.Dir(c.data))
	for _, s := range settings {
		opts += " -c " + s
	}
	out, err := c.pgctl("start", "-o", opts)
	if err != nil {
		t.Fatalf("start the test's PostgreSQL: %v\n%s", err, out)
	}
}

// ready reports whether the cluster answers.
func (c *ownCluster) ready() bool {
	return exec.Command(filepath.Join(c.bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port)).Run() == nil
}

// TestPostgresOnAFullDiskRefusesWebhooksAndLosesNothing: PostgreSQL's data
// directory on a small tmpfs fills while webhooks arrive. intake answers
// 503 (never 500, never a crash) to what it cannot make durable, and every
// webhook it acknowledged is kept. Once the space is back (and PostgreSQL,
// if it stopped, started again) the same intake process accepts again and
// processes everything it acknowledged; a restart of PostgreSQL finds the
// store whole.
func TestPostgresOnAFullDiskRefusesWebhooksAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PostgreSQL on a tmpfs and fills it")
	}
	if onPostgres() {
		t.Skip("runs once, in the default pass: it runs a PostgreSQL cluster of its own in either")
	}
	dir := mountTmpfs(t, "48m")
	pg := startOwnCluster(t, dir)
	s := start(t, t.TempDir(), "--db", pg.url)
	path := setupGitHub(t, s)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(id string) int {
		resp, err := client.Do(githubDelivery(s.url+path, id))
		if err != nil {
			t.Fatalf("webhook %s: no answer: %v\n%s", id, err, s.logs)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	acked := map[string]bool{}
	answered := map[int]int{}
	for i := range 20 {
		id := fmt.Sprintf("before-%d", i)
		if code := post(id); code/100 != 2 {
			t.Fatalf("before the disk filled, webhook %s answered %d", id, code)
		}
		acked[id] = true
	}

	filler := filepath.Join(dir, "filler")
	fillFileSystem(t, filler)
	t.Logf("disk filled")
	refused := 0
	for i := 0; refused < 20; i++ {
		if i == 3000 {
			t.Fatalf("3 000 webhooks on a full disk and only %d refused: %v", refused, answered)
		}
		id := fmt.Sprintf("full-%d", i)
		at := time.Now()
		code := post(id)
		answered[code]++
		if d := time.Since(at); d > time.Second {
			t.Logf("webhook %s answered %d in %v", id, code, d)
		}
		switch {
		case code/100 == 2:
			acked[id] = true
		case code == http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("on a full disk, webhook %s answered %d, want 2xx or 503 (answers so far %v)", id, code, answered)
		}
	}
	select {
	case <-s.done:
		t.Fatalf("intake exited on a full disk:\n%s", s.logs)
	default:
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL stops when it cannot write its WAL; it is started again,
	// as its supervisor would.
	deadline := time.Now().Add(10 * time.Second)
	for !pg.ready() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if !pg.ready() {
		pg.start(t)
	}
	eventually(t, 60*time.Second, "the same intake process accepting webhooks again", func() bool {
		return post(fmt.Sprintf("after-%d", time.Now().UnixNano()))/100 == 2
	})
	for i := range 20 {
		id := fmt.Sprintf("after-%d", i)
		if code := post(id); code/100 != 2 {
			t.Fatalf("with space back, webhook %s answered %d", id, code)
		}
		acked[id] = true
	}
	checkEveryAckedProcessedOnce(t, s, acked)

	// A restart of PostgreSQL finds everything that was committed.
	if out, err := pg.pgctl("restart", "-m", "fast"); err != nil {
		t.Fatalf("restart PostgreSQL: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "intake serving again after PostgreSQL's restart", func() bool {
		return post(fmt.Sprintf("restarted-%d", time.Now().UnixNano()))/100 == 2
	})
	checkEveryAckedProcessedOnce(t, s, acked)
	t.Logf("on the full disk: %v; %d acknowledged in all", answered, len(acked))
}

// checkEveryAckedProcessedOnce waits until every acknowledged delivery id
// has exactly one processed message.
func checkEveryAckedProcessedOnce(t *testing.T, s *server, acked map[string]bool) {
	t.Helper()
	var processed map[string]int
	eventually(t, 60*time.Second, "every acknowledged webhook processed", func() bool {
		processed = map[string]int{}
		for cursor := ""; ; {
			// A read may answer 503 while the store's connections come back.
			status, body := s.try(t, "GET", "/api/v1/messages?limit=500&cursor="+cursor, nil)
			var page struct {
				Items      []message `json:"items"`
				NextCursor string    `json:"next_cursor"`
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
				return false
			}
			for _, m := range page.Items {
				if m.State == "processed" {
					processed[m.ProviderEventID]++
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		for id := range acked {
			if processed[id] == 0 {
				return false
			}
		}
		return true
	})
	for id := range acked {
		if processed[id] != 1 {
			t.Fatalf("delivery %s processed %d times", id, processed[id])
		}
	}
}

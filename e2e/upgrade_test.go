package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// upgradeFrom is the release a rolling upgrade starts from: the last
// commit before bodies carried their message's received_at (PostgreSQL
// migration 25), so the new process migrates eight steps, a backfill and
// an index built concurrently among them, while the old one serves.
const upgradeFrom = "3fcc0d37f1d26d83ca1226ed0a19b9cdc0162aeb"

// previousBinary builds intake as it was at commit, from this checkout's
// history, once per machine: kept in ~/.cache/intake-ci beside the other
// tools CI builds.
func previousBinary(t *testing.T, commit string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "intake-ci", "intake-"+commit[:12], "intake")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive --format=tar "$1" | tar -x -C "$2"`, "sh", commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("the release a rolling upgrade starts from, commit %s, is not in this checkout's history (a shallow clone?): %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin+".partial", "./cmd/intake")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building intake at %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(bin+".partial", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestARollingUpgradeOnOnePostgresLosesNothingAndTheOldProcessServesOn: the
// previous release serves on a database; this one starts beside it and
// migrates the schema while webhooks keep arriving at both. The old
// process keeps acknowledging, processing and delivering until it is
// stopped; every acknowledged webhook reaches the consumer, every message
// settles, every body either wrote carries its received_at, so retention
// finds it, and every event either wrote has its search row, with its
// creation and type.
func TestARollingUpgradeOnOnePostgresLosesNothingAndTheOldProcessServesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a previous release and runs it beside this one")
	}
	if onPostgres() {
		t.Skip("runs once, in the default pass: it makes its own PostgreSQL database in either")
	}
	old := previousBinary(t, upgradeFrom)
	db := databaseFor(t, t.TempDir())
	env := postgresEnv()
	before := launchBinary(t, old, env, t.TempDir(), "--db", withPool(db), "--delivery-timeout", "3s")
	before.waitServing(t)

	consumer := newCountingConsumer()
	defer consumer.Close()
	path := setupGitHub(t, before)
	var orgs struct{ Items []struct{ ID string } }
	before.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	before.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "app", "app": "app",
		"url": consumer.URL + "/app", "event_types": []string{"github.issues.*"}}, nil)

	// The old release alone.
	first := deliveryIDs(0, 60)
	p := &poster{procs: []*server{before}, path: path, dead: make([]atomic.Bool, 1), acked: map[string]bool{}}
	p.post(first, 4)
	eventually(t, 30*time.Second, "the old release delivers its webhooks", func() bool { return consumer.got("/app", first) })

	// The new one starts and migrates while the old one takes webhooks.
	during := deliveryIDs(60, 260)
	posted := make(chan struct{})
	go func() { p.post(during, 4); close(posted) }()
	after := launch(t, env, t.TempDir(), "--db", withPool(db), "--delivery-timeout", "3s")
	after.waitServing(t)
	<-posted

	// Both serve on the migrated schema: the old one goes on acknowledging,
	// processing and delivering webhooks only it is sent.
	both := deliveryIDs(260, 460)
	p = &poster{procs: []*server{before, after}, path: path, dead: make([]atomic.Bool, 2), acked: p.acked}
	p.post(both, 4)
	onlyOld := deliveryIDs(460, 520)
	p = &poster{procs: []*server{before}, path: path, dead: make([]atomic.Bool, 1), acked: p.acked}
	p.post(onlyOld, 4)
	eventually(t, 30*time.Second, "the old release delivers what it alone was sent after the migration", func() bool {
		return consumer.got("/app", onlyOld)
	})

	// The old one is stopped as an upgrade stops it; the new one goes on.
	before.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-before.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the old release did not stop within 30s of SIGTERM:\n%s", before.logs)
	}
	last := deliveryIDs(520, 580)
	p = &poster{procs: []*server{after}, path: path, dead: make([]atomic.Bool, 1), acked: p.acked}
	p.post(last, 4)

	all := deliveryIDs(0, 580)
	if n := p.ackedCount(); n != len(all) {
		t.Fatalf("%d webhooks acknowledged, want %d", n, len(all))
	}
	eventually(t, 60*time.Second, "every acknowledged webhook delivered", func() bool { return consumer.got("/app", all) })
	var msgs []message
	eventually(t, 30*time.Second, "every message settled", func() bool {
		msgs = after.messages(t)
		for _, m := range msgs {
			if m.State != "processed" {
				return false
			}
		}
		return len(msgs) == len(all)
	})

	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var unstamped int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM message_bodies WHERE received_at IS NULL`).Scan(&unstamped); err != nil {
		t.Fatal(err)
	}
	if unstamped != 0 {
		t.Fatalf("%d bodies have no received_at, so retention never deletes them", unstamped)
	}
	var unsearchable, events int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT FROM event_search s
		WHERE s.event_id = e.id AND s.created_at = e.created_at AND s.type = e.type)), count(*) FROM events e`).Scan(&unsearchable, &events); err != nil {
		t.Fatal(err)
	}
	if unsearchable != 0 || events < len(all) {
		t.Fatalf("%d of %d events have no search row with their creation and type, so a search misses them", unsearchable, events)
	}
}

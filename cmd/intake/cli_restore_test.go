package main

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/replica"
	"github.com/intakehq/intake/store/sqlite"
)

// replicatedStore serves a store replicated to a new directory, records
// fp in it, and returns the replica's URL once that reached it.
func replicatedStore(t *testing.T, fp string) string {
	t.Helper()
	unsetReplicateEnv(t)
	ctx := context.Background()
	u := "file://" + filepath.Join(t.TempDir(), "replica")
	store, _, rep, err := serveFlags(t, "--data", t.TempDir(), "--replicate", u).openStore(ctx, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordKeyFingerprint(ctx, fp); err != nil {
		t.Fatal(err)
	}
	if err := rep.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return u
}

// storeWith makes a store in data holding fp.
func storeWith(t *testing.T, data, fp string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RecordKeyFingerprint(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
}

func fingerprintIn(t *testing.T, data string) string {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fp, err := s.KeyFingerprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func restoreInto(data, from string, args ...string) error {
	c := &RestoreCmd{From: from, Data: data}
	for _, a := range args {
		switch {
		case a == "--force":
			c.Force = true
		case strings.HasPrefix(a, "--to-time="):
			c.ToTime = strings.TrimPrefix(a, "--to-time=")
		}
	}
	return c.restore(context.Background(), slog.New(slog.DiscardHandler))
}

func TestRestoreRebuildsAStoreAndRefusesADirectoryHoldingOneUnlessForced(t *testing.T) {
	u := replicatedStore(t, "replicated")
	fresh := filepath.Join(t.TempDir(), "new")
	if err := restoreInto(fresh, u); err != nil {
		t.Fatal(err)
	}
	if got := fingerprintIn(t, fresh); got != "replicated" {
		t.Errorf("restored into a new directory: %q, want the replica's store", got)
	}

	data := t.TempDir()
	storeWith(t, data, "held")
	os.MkdirAll(replica.LocalState(filepath.Join(data, "intake.db")), 0o700)
	err := restoreInto(data, u)
	if err == nil || !strings.Contains(err.Error(), "holds a store already") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore into a directory holding a store: %v, want refused, naming --force", err)
	}
	if got := fingerprintIn(t, data); got != "held" {
		t.Fatalf("refused, the store holds %q, want it untouched", got)
	}
	if err := restoreInto(data, u, "--force"); err != nil {
		t.Fatal(err)
	}
	if got := fingerprintIn(t, data); got != "replicated" {
		t.Errorf("--force: the store holds %q, want the replica's", got)
	}
	if _, err := os.Stat(replica.LocalState(filepath.Join(data, "intake.db"))); !os.IsNotExist(err) {
		t.Errorf("--force: the replicator's state of the replaced store is still there (%v)", err)
	}
}

func TestRestoreFromACorruptReplicaOverwritesNothing(t *testing.T) {
	u := replicatedStore(t, "replicated")
	root := strings.TrimPrefix(u, "file://")
	corrupted := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ltx") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i := 100; i < len(b); i++ {
			b[i] ^= 0xff
		}
		corrupted++
		return os.WriteFile(p, b, 0o600)
	})
	if corrupted == 0 {
		t.Fatal("the replica holds no LTX file to corrupt")
	}
	data := t.TempDir()
	storeWith(t, data, "held")
	err := restoreInto(data, u, "--force")
	if err == nil {
		t.Fatal("restore from a corrupt replica succeeded")
	}
	t.Logf("refused: %v", err)
	if got := fingerprintIn(t, data); got != "held" {
		t.Errorf("after a failed restore the store holds %q, want it untouched", got)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "intake.db.restoring*")); len(left) > 0 {
		t.Errorf("a failed restore left %v", left)
	}
}

func TestRestoreRefusesABadTimeABadURLAndAnEmptyReplica(t *testing.T) {
	empty := "file://" + filepath.Join(t.TempDir(), "replica")
	for _, c := range []struct {
		from string
		args []string
		want string
	}{
		{empty, []string{"--to-time=yesterday"}, `--to-time "yesterday": want an RFC 3339 time`},
		{"/mnt/backup", nil, `--from "/mnt/backup": want s3://`},
		{empty, nil, "holds no store"},
	} {
		data := t.TempDir()
		err := restoreInto(data, c.from, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("restore --from %s %v: %v, want %q", c.from, c.args, err, c.want)
		}
		if holdsStore(filepath.Join(data, "intake.db")) {
			t.Errorf("restore --from %s %v: refused, yet a store was made", c.from, c.args)
		}
	}
}

// serve --replicate on a data directory that holds no store restores it
// first; from an empty replica it starts fresh. The master key is not in
// the replica: without it the server does not start.
func TestServeOnADataDirectoryHoldingNoStoreRestoresFirst(t *testing.T) {
	u := replicatedStore(t, "replicated")
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	data := t.TempDir()
	err := serveFlags(t, "--data", data, "--replicate", u).restoreFirst(ctx, log)
	if err == nil || !strings.Contains(err.Error(), "the master key is not in it") {
		t.Fatalf("restored without a master key: %v, want refused, saying so", err)
	}

	data = t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "master.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := serveFlags(t, "--data", data, "--replicate", u).restoreFirst(ctx, log); err != nil {
		t.Fatal(err)
	}
	if got := fingerprintIn(t, data); got != "replicated" {
		t.Errorf("serve restored %q, want the replica's store", got)
	}
	// The restored store is the one the replica holds: it carries on
	// replicating there.
	store, _, rep, err := serveFlags(t, "--data", data, "--replicate", u).openStore(ctx, log, nil)
	if err != nil {
		t.Fatalf("serve on the restored store: %v", err)
	}
	store.Close()
	rep.Close(ctx)
	// A store held already is served as it is.
	held := t.TempDir()
	storeWith(t, held, "held")
	if err := serveFlags(t, "--data", held, "--replicate", u).restoreFirst(ctx, log); err != nil {
		t.Fatal(err)
	}
	if got := fingerprintIn(t, held); got != "held" {
		t.Errorf("a held store became %q", got)
	}

	empty := t.TempDir()
	if err := serveFlags(t, "--data", empty, "--replicate", "file://"+filepath.Join(t.TempDir(), "r")).restoreFirst(ctx, log); err != nil {
		t.Fatalf("an empty replica: %v, want a fresh start", err)
	}
	if holdsStore(filepath.Join(empty, "intake.db")) {
		t.Error("an empty replica: a store was made before serve opens one")
	}
}

// A store restored to an earlier time is another store than the one its
// replica goes on holding: a server on it is refused that replica, and
// replicates elsewhere.
func TestAStoreRestoredToAnEarlierTimeIsRefusedItsOldReplica(t *testing.T) {
	u := replicatedStore(t, "replicated")
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	data := t.TempDir()
	if err := restoreInto(data, u, "--to-time="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	if got := fingerprintIn(t, data); got != "replicated" {
		t.Fatalf("restored to a time: %q, want the replica's store", got)
	}
	_, _, _, err := serveFlags(t, "--data", data, "--replicate", u).openStore(ctx, log, nil)
	if err == nil || !strings.Contains(err.Error(), "holds another store") {
		t.Fatalf("serve on it with the old replica: %v, want refused", err)
	}
	store, _, rep, err := serveFlags(t, "--data", data, "--replicate", "file://"+filepath.Join(t.TempDir(), "new")).openStore(ctx, log, nil)
	if err != nil {
		t.Fatalf("serve on it with a new replica: %v", err)
	}
	store.Close()
	rep.Close(ctx)
}

// bodiesOf opens the store in data and returns where serve with args puts
// its large bodies, and where the store then records them.
func bodiesOf(t *testing.T, data string, args ...string) (used, recorded string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(data, "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	used, err = serveFlags(t, append([]string{"--data", data}, args...)...).bodyLocation(ctx, slog.New(slog.DiscardHandler), s)
	if err != nil {
		t.Fatal(err)
	}
	if recorded, err = s.BodyLocation(ctx); err != nil {
		t.Fatal(err)
	}
	return used, recorded
}

// A store restored to a time replicates to a new place, while its large
// bodies stay where they were written, beside the old replica: serve reads
// them (and puts new ones) there, unless --blob-store names another place,
// which is then recorded. A store replicated before the place was recorded
// kept them beside its replica: a restore records that.
func TestAStoreRestoredToATimeKeepsItsBodiesWhereTheyWere(t *testing.T) {
	unsetReplicateEnv(t)
	data := t.TempDir()
	u := "file://" + filepath.Join(t.TempDir(), "replica")
	if used, recorded := bodiesOf(t, data, "--replicate", u); used != u+"/bodies" || recorded != used {
		t.Fatalf("replicating to %s: bodies go to %q, recorded %q; want beside the replica, recorded", u, used, recorded)
	}
	if used, _ := bodiesOf(t, data); used != "" {
		t.Fatalf("without --replicate: bodies go to %q, want the spool as ever", used)
	}

	legacy := replicatedStore(t, "replicated") // records no place
	future := "--to-time=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	restored := t.TempDir()
	if err := restoreInto(restored, legacy, future); err != nil {
		t.Fatal(err)
	}
	next := "file://" + filepath.Join(t.TempDir(), "new")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicate", next}, legacy + "/bodies"},
		{[]string{"--replicate", next, "--blob-store", "file:///elsewhere"}, "file:///elsewhere"},
		{[]string{"--replicate", next}, "file:///elsewhere"},
	} {
		if used, recorded := bodiesOf(t, restored, c.args...); used != c.want || recorded != c.want {
			t.Errorf("%v: bodies go to %q, recorded %q; want %q", c.args, used, recorded, c.want)
		}
	}
}

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAReplicatedStoreNeverCheckpointsBehindTheReplicator opens a store as
// the replicator sees it: another connection (the replicator's) holds the
// database open, so the store's closing is not the last one. Reopened, a
// replicated store leaves the WAL as the last run left it, and its writer
// never checkpoints on its own; an unreplicated one empties the WAL at open.
// Built with the sqlite_cgo tag, a replicated store is refused at open
// instead (the replicator runs on modernc.org/sqlite), naming the tag.
func TestAReplicatedStoreNeverCheckpointsBehindTheReplicator(t *testing.T) {
	for _, replicated := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "intake.db")
		s, err := Open(context.Background(), Options{Path: path, Replicated: replicated})
		if replicated && !replicable {
			if err == nil || !strings.Contains(err.Error(), "sqlite_cgo") {
				t.Fatalf("a replicated store on the cgo driver: %v, want it refused naming the sqlite_cgo tag", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The replicator's connection, open throughout.
		other, err := openDB(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := other.Ping(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.write.Exec("CREATE TABLE replicated_probe (x); INSERT INTO replicated_probe VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		before := walSize(t, path)
		if before == 0 {
			t.Fatal("the WAL is empty before reopening: the test writes nothing to see")
		}
		s, err = Open(context.Background(), Options{Path: path, Replicated: replicated})
		if err != nil {
			t.Fatal(err)
		}
		after := walSize(t, path)
		auto := pragmaInt(t, s.write, "wal_autocheckpoint")
		s.Close()
		if replicated {
			if after < before {
				t.Errorf("replicated: the WAL shrank from %d to %d bytes at open: the store checkpointed behind the replicator", before, after)
			}
			if auto != 0 {
				t.Errorf("replicated: writer wal_autocheckpoint = %d, want 0 (the replicator checkpoints)", auto)
			}
		} else {
			if after != 0 {
				t.Errorf("unreplicated: the WAL holds %d bytes after open, want it emptied", after)
			}
			if auto == 0 {
				t.Error("unreplicated: writer wal_autocheckpoint = 0, want the store's own")
			}
		}
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A store has an identity from its first opening on, kept as it reopens.
func TestAStoreKeepsTheIdentityItGotWhenFirstOpened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intake.db")
	var ids []string
	for range 2 {
		s, err := Open(context.Background(), Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.ID(context.Background())
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids[0]) != 32 || ids[0] != ids[1] {
		t.Errorf("store ids %q, want one of 32 hex digits, kept", ids)
	}
	other, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	before, _ := other.ID(context.Background())
	if before == ids[0] {
		t.Errorf("two stores share the id %q", before)
	}
	forked, err := other.Fork(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := other.ID(context.Background()); id != forked || len(forked) != 32 || forked == before {
		t.Errorf("forked: the store's id %q, Fork said %q", id, forked)
	}
}

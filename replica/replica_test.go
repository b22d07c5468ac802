package replica

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openDB opens a database in WAL mode that never checkpoints on its own,
// as the store opens itself when replicated.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS webhooks (id INTEGER PRIMARY KEY, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	return db
}

func insert(t *testing.T, db *sql.DB, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := db.Exec("INSERT INTO webhooks (body) VALUES (?)", b); err != nil {
			t.Fatal(err)
		}
	}
}

func bodies(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT body FROM webhooks ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, ",")
}

func start(t *testing.T, path, u string) *Replicator {
	t.Helper()
	r, err := Start(context.Background(), Options{URL: u, Path: path, StoreID: "store-" + filepath.Base(filepath.Dir(path))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func fileURL(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "replica") }

func TestACommitSyncedIsInTheRestoredDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	db := openDB(t, path)
	u := fileURL(t)
	r := start(t, path, u)
	insert(t, db, "a", "b")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	insert(t, db, "c")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// The machine is lost: only the replica is left.
	restored := filepath.Join(t.TempDir(), "new", "intake.db")
	if err := Restore(ctx, u, restored, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, restored); got != "a,b,c" {
		t.Errorf("restored bodies = %q, want a,b,c", got)
	}
}

func TestRestoreToATimeBetweenTwoBatchesRestoresTheFirstOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intake.db")
	db := openDB(t, path)
	u := fileURL(t)
	r := start(t, path, u)
	insert(t, db, "first-1", "first-2")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	between := time.Now()
	// The replica stamps its files with the wall clock in milliseconds:
	// the second batch must come at least a millisecond later.
	for !time.Now().After(between.Add(time.Millisecond)) {
	}
	insert(t, db, "second-1")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, restored, between, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, restored); got != "first-1,first-2" {
		t.Errorf("restored to a time between the batches: bodies = %q, want first-1,first-2", got)
	}
	latest := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, latest, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, latest); got != "first-1,first-2,second-1" {
		t.Errorf("restored to the latest: bodies = %q, want all three", got)
	}
}

func TestRestoreFromAnEmptyReplicaSaysItIsEmpty(t *testing.T) {
	err := Restore(context.Background(), fileURL(t), filepath.Join(t.TempDir(), "intake.db"), time.Time{}, nil)
	if !errors.Is(err, ErrEmpty) {
		t.Errorf("Restore from an empty replica = %v, want ErrEmpty", err)
	}
}

func TestAMalformedReplicaURLIsRefused(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	for _, u := range []string{
		"", "/mnt/backup", "file://relative/path", "file:///x?y=1", "http://example.com/x",
		"s3://", "s3://bucket/p?endpoint=ftp://host", "s3://user:secret@bucket/p",
	} {
		if err := Check(u); err == nil {
			t.Errorf("Check(%q) = nil, want an error", u)
		}
	}
	for _, u := range []string{"file:///mnt/backup/intake", "s3://bucket/intake?endpoint=http://127.0.0.1:8333&region=us-east-1", "s3://bucket"} {
		if err := Check(u); err != nil {
			t.Errorf("Check(%q) = %v, want nil", u, err)
		}
	}
}

// A replica holds one store: another store's pages shipped on top of it
// would leave a replica that restores neither.
func TestAReplicaRefusesAStoreOtherThanTheOneItHolds(t *testing.T) {
	ctx := context.Background()
	u := fileURL(t)
	path := filepath.Join(t.TempDir(), "intake.db")
	insert(t, openDB(t, path), "a")
	r, err := Start(ctx, Options{URL: u, Path: path, StoreID: "store-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(t.TempDir(), "intake.db")
	insert(t, openDB(t, other), "b")
	_, err = Start(ctx, Options{URL: u, Path: other, StoreID: "store-b"})
	if err == nil || !strings.Contains(err.Error(), "holds another store (store-a; this one is store-b)") {
		t.Fatalf("another store on the replica: %v, want refused", err)
	}
	// The store it holds carries on.
	r, err = Start(ctx, Options{URL: u, Path: path, StoreID: "store-a"})
	if err != nil {
		t.Fatalf("the store the replica holds: %v", err)
	}
	r.Close(ctx)

	// A replica with a database in it and no mark came from elsewhere.
	if err := os.Remove(filepath.Join(strings.TrimPrefix(u, "file://"), markKey)); err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Options{URL: u, Path: other, StoreID: "store-b"})
	if err == nil || !strings.Contains(err.Error(), "holds a database no intake store marked as its own") {
		t.Fatalf("an unmarked replica holding a database: %v, want refused", err)
	}
	if got := bodies(t, other); got != "b" {
		t.Errorf("refused, the other store holds %q, want it untouched", got)
	}
	restored := filepath.Join(t.TempDir(), "intake.db")
	if err := Restore(ctx, u, restored, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := bodies(t, restored); got != "a" {
		t.Errorf("refused, the replica restores %q, want the store it held", got)
	}
}

func TestAnS3ReplicaIsRefusedWithACABundleItsClientCannotUse(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "/etc/ssl/ca.pem")
	if err := Check("s3://bucket/intake"); err == nil || !strings.Contains(err.Error(), "AWS_CA_BUNDLE is set") {
		t.Errorf("with AWS_CA_BUNDLE: %v, want refused, saying why", err)
	}
	if err := Check("file:///mnt/backup/intake"); err != nil {
		t.Errorf("a file replica with AWS_CA_BUNDLE: %v", err)
	}
}

// The settings given reach Litestream: how often it looks at the WAL,
// how often it snapshots and how long it keeps snapshots; unset, its
// defaults and a second.
func TestTheReplicationSettingsReachLitestream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intake.db")
	openDB(t, path)
	r, err := Start(context.Background(), Options{URL: fileURL(t), Path: path, StoreID: "s",
		Every: 250 * time.Millisecond, SnapshotInterval: time.Hour, Retention: 72 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if r.every != 250*time.Millisecond || r.db.MonitorInterval != 250*time.Millisecond ||
		r.store.SnapshotInterval != time.Hour || r.store.SnapshotLevel().Interval != time.Hour || r.store.SnapshotRetention != 72*time.Hour {
		t.Errorf("every %s, monitor %s, snapshots every %s kept %s; want 250ms, 250ms, 1h, 72h",
			r.every, r.db.MonitorInterval, r.store.SnapshotInterval, r.store.SnapshotRetention)
	}
	path = filepath.Join(t.TempDir(), "intake.db")
	openDB(t, path)
	d := start(t, path, fileURL(t))
	if d.every != time.Second || d.db.MonitorInterval != time.Second || d.store.SnapshotInterval != 24*time.Hour || d.store.SnapshotRetention != 24*time.Hour {
		t.Errorf("defaults: every %s, monitor %s, snapshots every %s kept %s; want 1s, 1s, 24h, 24h",
			d.every, d.db.MonitorInterval, d.store.SnapshotInterval, d.store.SnapshotRetention)
	}
}

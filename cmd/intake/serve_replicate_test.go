package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake/replica"
	"github.com/intakehq/intake/store/sqlite"
)

func unsetReplicateEnv(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // Litestream's S3 client cannot use one
	for _, env := range []string{"INTAKE_REPLICATE", "INTAKE_REPLICATE_SYNC", "INTAKE_REPLICATE_INTERVAL", "INTAKE_REPLICATE_SNAPSHOT_INTERVAL",
		"INTAKE_REPLICATE_RETENTION", "INTAKE_BLOB_STORE", "INTAKE_DB"} {
		t.Setenv(env, "") // restored when the test ends
		os.Unsetenv(env)
	}
}

// A --replicate that cannot work stops the server before it starts, the
// error naming the flag (main prints it and exits 1).
func TestReplicateIsRefusedOnPostgreSQLAndWithAMalformedURL(t *testing.T) {
	unsetReplicateEnv(t)
	for _, c := range []struct {
		args []string
		want string // "": accepted
	}{
		{nil, ""},
		{[]string{"--replicate", "file:///mnt/backup/intake"}, ""},
		{[]string{"--replicate", "s3://bucket/intake?endpoint=http://127.0.0.1:8333&region=us-east-1"}, ""},
		{[]string{"--replicate", "s3://bucket/intake", "--db", "postgres://db"}, "--replicate is for the embedded store: on PostgreSQL (--db) use PostgreSQL's own replication"},
		{[]string{"--replicate", "/mnt/backup"}, `--replicate "/mnt/backup": want s3://BUCKET/PATH`},
		{[]string{"--replicate", "file://backup"}, `--replicate "file://backup": want file:///ABSOLUTE/PATH`},
		{[]string{"--replicate", "s3://bucket/p?endpoint=localhost:8333"}, `--replicate endpoint "localhost:8333": want http://host:port`},
		{[]string{"--replicate-sync"}, "--replicate-sync needs --replicate"},
		{[]string{"--replicate-sync", "--replicate", "file:///mnt/backup/intake"}, ""},
		{[]string{"--replicate", "file:///r", "--replicate-interval", "250ms", "--replicate-snapshot-interval", "1h", "--replicate-retention", "72h"}, ""},
		{[]string{"--replicate", "file:///r", "--replicate-interval", "0s"}, "--replicate-interval 0s: want more than 0"},
		{[]string{"--replicate", "file:///r", "--replicate-snapshot-interval", "10s"}, "--replicate-snapshot-interval 10s: want at least 1m"},
		{[]string{"--replicate", "file:///r", "--replicate-snapshot-interval", "48h"}, "--replicate-retention 24h0m0s: want at least --replicate-snapshot-interval (48h0m0s)"},
	} {
		err := serveFlags(t, c.args...).checkReplicate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// Large bodies spooled under --data would be lost with the machine: with
// --replicate and no --blob-store they go beside the replica.
func TestLargeBodiesGoBesideTheReplicaUnlessABlobStoreIsNamed(t *testing.T) {
	unsetReplicateEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--replicate", "file:///mnt/backup/intake/"}, "file:///mnt/backup/intake/bodies"},
		{[]string{"--replicate", "s3://b/intake?endpoint=http://h:1&region=r"}, "s3://b/intake/bodies?endpoint=http://h:1&region=r"},
		{[]string{"--replicate", "s3://b"}, "s3://b/bodies"},
		{[]string{"--replicate", "s3://b/intake", "--blob-store", "s3://other"}, "s3://other"},
	} {
		if got := serveFlags(t, c.args...).blobURL(); got != c.want {
			t.Errorf("%v: large bodies go to %q, want %q", c.args, got, c.want)
		}
	}
}

// The server's store, replicated to a directory, is rebuilt elsewhere
// from the replica alone with what it committed.
func TestServeReplicatesTheStoreARestoreRebuildsIt(t *testing.T) {
	unsetReplicateEnv(t)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	u := "file://" + filepath.Join(t.TempDir(), "replica")
	c := serveFlags(t, "--data", t.TempDir(), "--replicate", u)
	store, _, rep, err := c.openStore(ctx, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil {
		t.Fatal("--replicate: no replicator")
	}
	if _, err := store.RecordKeyFingerprint(ctx, "fp-1"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "intake.db")
	if err := replica.Restore(ctx, u, restored, time.Time{}, log); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, sqlite.Options{Path: restored})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fp, err := s.KeyFingerprint(ctx); err != nil || fp != "fp-1" {
		t.Errorf("the restored store's key fingerprint: %q %v, want fp-1", fp, err)
	}
}

func TestServeRefusesAReplicaItCannotReachNamingTheFlag(t *testing.T) {
	unsetReplicateEnv(t)
	c := serveFlags(t, "--data", t.TempDir(), "--replicate", "s3://intake/r?endpoint=http://127.0.0.1:1&region=us-east-1")
	_, _, _, err := c.openStore(context.Background(), slog.New(slog.DiscardHandler), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--replicate s3://intake/r cannot be reached") {
		t.Fatalf("an unreachable replica: %v, want --replicate … cannot be reached", err)
	}
}

type pinger struct{}

func (pinger) Ping(context.Context) error { return nil }

type fixedStatus replica.Status

func (f fixedStatus) Status() replica.Status { return replica.Status(f) }

// /readyz tells how the replica stands; an unreachable replica does not
// make the server unready while ingress goes on acknowledging.
func TestReadyzTellsTheReplicasLagAndThatItCannotBeReached(t *testing.T) {
	var draining atomic.Bool
	get := func(h http.Handler) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(ready(pinger{}, &draining, nil)); code != 200 || body != "ready\n" {
		t.Errorf("no --replicate: %d %q, want 200 ready", code, body)
	}
	synced := fixedStatus{Lag: 1200 * time.Millisecond, LastSync: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC), Errors: 2}
	if code, body := get(ready(pinger{}, &draining, synced)); code != 200 || body != "ready\nreplica: lag 1.2s, last sync 2026-12-04T12:00:00Z, 2 failed syncs\n" {
		t.Errorf("replicating: %d %q", code, body)
	}
	failing := fixedStatus{Lag: 40 * time.Second, Errors: 9, Err: errors.New("dial tcp: connection refused")}
	if code, body := get(ready(pinger{}, &draining, failing)); code != 200 || body != "ready\nreplica unreachable: lag 40s, last sync none yet, 9 failed syncs: dial tcp: connection refused\n" {
		t.Errorf("replica unreachable: %d %q", code, body)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/intakehq/intake/replica"
	"github.com/intakehq/intake/store/sqlite"
)

// RestoreCmd rebuilds a data directory's store from its replica, after the
// machine that held it was lost (serve --replicate).
type RestoreCmd struct {
	From   string `name:"from" required:"" placeholder:"URL" help:"The replica, as serve --replicate named it: s3://BUCKET/PATH?endpoint=URL&region=REGION (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) or file:///PATH."`
	Data   string `name:"data" default:"./data" env:"INTAKE_DATA" help:"The data directory to rebuild the store in; it must hold none (or give --force)."`
	ToTime string `name:"to-time" placeholder:"RFC3339" help:"Rebuild the store as it was at this time (e.g. 2026-12-04T13:00:00Z), within the replica's last day; empty: its latest."`
	Force  bool   `name:"force" help:"Replace the store the data directory holds, once the restore has succeeded (a failed one leaves it as it was)."`
}

// Run restores, interrupted by SIGINT or SIGTERM.
func (c *RestoreCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return c.restore(ctx, log)
}

func (c *RestoreCmd) restore(ctx context.Context, log *slog.Logger) error {
	if err := replica.Check(c.From); err != nil {
		return fmt.Errorf("--from %w", err)
	}
	var at time.Time
	if c.ToTime != "" {
		t, err := time.Parse(time.RFC3339, c.ToTime)
		if err != nil {
			return fmt.Errorf("--to-time %q: want an RFC 3339 time such as 2026-12-04T13:00:00Z", c.ToTime)
		}
		at = t
	}
	path := filepath.Join(c.Data, "intake.db")
	if holdsStore(path) && !c.Force {
		return fmt.Errorf("--data %s holds a store already: restore into a directory that holds none, or give --force to replace it", c.Data)
	}
	bodies, err := restoreStore(ctx, c.From, path, at, log)
	if err != nil {
		return err
	}
	fmt.Printf("restored the store into %s from %s\n", path, replica.Redact(c.From))
	fmt.Printf("its large bodies stay in %s: intake serve --replicate reads them there, and puts new ones there, unless --blob-store names another place\n", replica.Redact(bodies))
	if _, err := os.Stat(filepath.Join(c.Data, "master.key")); err != nil && os.Getenv("INTAKE_MASTER_KEY") == "" {
		fmt.Printf("the master key is not in the replica: put the lost machine's master.key into %s, or set INTAKE_MASTER_KEY, before intake serve; without it sealed secrets cannot be opened\n", c.Data)
	}
	return nil
}

// holdsStore reports whether the database file at path holds anything.
func holdsStore(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() > 0
}

// settleRestored readies the store just restored at path from the replica
// at u, and returns where its large bodies are kept. A store replicated by
// a release that recorded no place kept them beside the replica (unless
// --blob-store named one, which serve is given again): that is recorded.
// Restored to an earlier time (forked), it is given an identity of its
// own.
func settleRestored(ctx context.Context, path, u string, forked bool, log *slog.Logger) (bodies string, err error) {
	s, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	bodies, err = s.BodyLocation(ctx)
	if err == nil && bodies == "" {
		bodies = bodiesBeside(u)
		err = s.RecordBodyLocation(ctx, bodies)
	}
	if err != nil {
		return "", fmt.Errorf("record where the restored store's large bodies are: %w", err)
	}
	if !forked {
		return bodies, nil
	}
	id, err := s.Fork(ctx)
	if err != nil {
		return "", fmt.Errorf("give the restored store an identity of its own: %w", err)
	}
	log.Info("restored to an earlier time: the store is a new one, to replicate to a location of its own; its large bodies stay where they are",
		"store_id", id, "bodies", replica.Redact(bodies))
	return bodies, nil
}

// errEmptyReplica is restoreStore's answer for a replica that holds no
// store: there is nothing to rebuild.
var errEmptyReplica = errors.New("holds no store")

// restoreStore rebuilds the database at path from the replica at u as it
// was at at (zero: its latest), and returns where its large bodies are
// kept (settleRestored). The restore goes to a file of its own first:
// whatever is at path is replaced only once it succeeded, and the
// replicator's record of what it shipped from the old store goes with it.
func restoreStore(ctx context.Context, u, path string, at time.Time, log *slog.Logger) (bodies string, _ error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	tmp := path + ".restoring"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	err := replica.Restore(ctx, u, tmp, at, log)
	if errors.Is(err, replica.ErrEmpty) {
		if at.IsZero() {
			return "", fmt.Errorf("the replica at %s %w", replica.Redact(u), errEmptyReplica)
		}
		return "", fmt.Errorf("the replica at %s %w as at %s", replica.Redact(u), errEmptyReplica, at.Format(time.RFC3339))
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", err
	}
	// Restored to an earlier time, it is another store than the one the
	// replica holds: a server on it must replicate elsewhere.
	bodies, err = settleRestored(ctx, tmp, u, !at.IsZero(), log)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	for _, old := range []string{path + "-wal", path + "-shm", replica.LocalState(path)} {
		if err := os.RemoveAll(old); err != nil {
			return "", err
		}
	}
	return bodies, os.Rename(tmp, path)
}

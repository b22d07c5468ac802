// Package replica ships the embedded store's database file to object
// storage as it changes, and rebuilds it from there (DESIGN §21). It is
// Litestream used as a library: while it replicates, Litestream owns the
// database's checkpoints (the store opens with sqlite.Options.Replicated).
package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/benbjohnson/litestream/s3"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/blob"
	"github.com/intakehq/intake/internal/redact"
)

// ErrEmpty is what Restore answers for a replica that holds no database.
var ErrEmpty = errors.New("the replica holds no database")

// client is the replica client u names: s3://BUCKET[/PATH]?endpoint=…&region=…,
// in the form and with the credentials of --blob-store (the standard AWS
// variables), or file:///PATH.
func client(u string) (litestream.ReplicaClient, error) {
	if rest, ok := strings.CutPrefix(u, "file://"); ok {
		if !strings.HasPrefix(rest, "/") || strings.ContainsAny(rest, "?#") {
			return nil, fmt.Errorf("%q: want file:///ABSOLUTE/PATH", u)
		}
		return file.NewReplicaClient(filepath.Clean(rest)), nil
	}
	if !strings.HasPrefix(u, "s3://") {
		return nil, fmt.Errorf("%q: want s3://BUCKET/PATH?endpoint=…&region=… or file:///PATH", u)
	}
	loc, err := blob.ParseS3URL(u)
	if err != nil {
		return nil, err
	}
	if os.Getenv("AWS_CA_BUNDLE") != "" {
		// Litestream's S3 client brings an HTTP client the AWS SDK cannot
		// add a CA bundle to: it would fail at its first request.
		return nil, fmt.Errorf("%s: AWS_CA_BUNDLE is set, and the S3 client of Litestream v0.5.18 cannot use a CA bundle: unset it, and trust the CA system-wide instead", Redact(u))
	}
	c := s3.NewReplicaClient()
	c.Bucket, c.Path, c.Region, c.Endpoint = loc.Bucket, loc.Prefix, loc.Region, loc.Endpoint
	// S3-compatible servers (SeaweedFS, MinIO…) take buckets in the path.
	c.ForcePathStyle = loc.Endpoint != ""
	return c, nil
}

// Check reports whether u is a replica URL intake can use, without
// reaching it.
func Check(u string) error {
	_, err := client(u)
	return err
}

// reach makes sure the replica at u can be reached: an S3 bucket is
// created if it is missing, as --blob-store's is.
func reach(ctx context.Context, u string, c litestream.ReplicaClient) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if strings.HasPrefix(u, "s3://") {
		b, err := blob.Open(ctx, u)
		if err != nil {
			return err
		}
		if err := b.EnsureBucket(ctx); err != nil {
			return err
		}
	}
	if err := c.Init(ctx); err != nil {
		return err
	}
	itr, err := c.LTXFiles(ctx, litestream.SnapshotLevel, 0, false)
	if err != nil {
		return err
	}
	return itr.Close()
}

// Options configure a Replicator.
type Options struct {
	// URL is where the database goes (see client).
	URL string
	// Path is the database file; the store has it open.
	Path string
	// StoreID is the identity of the store in the database
	// (sqlite.Store.ID): a replica holds one store, and no other may
	// continue it.
	StoreID string
	// Clock times the syncs for Status (default: the wall clock).
	Clock  intake.Clock
	Logger *slog.Logger
	// Every is how often Litestream looks for new commits in the WAL and
	// the replica is synced when no commit asks for it, and how soon a
	// failed sync is tried again (default 1s): the lag without
	// --replicate-sync is about one to two of it.
	Every time.Duration
	// SnapshotInterval is how often a whole snapshot of the database is
	// written to the replica (default 24h): a restore reads the last
	// snapshot and every transaction since.
	SnapshotInterval time.Duration
	// Retention is how long snapshots are kept, so how far back a restore
	// to a point in time reaches (default 24h).
	Retention time.Duration
}

// Replicator ships one database to its replica in the background, and
// tells when a commit has reached it. Litestream turns the WAL into
// transaction files as it grows; the Replicator's loop ships them, so it
// knows each sync's outcome and how far behind the replica is.
type Replicator struct {
	store *litestream.Store
	db    *litestream.DB
	clock intake.Clock
	log   *slog.Logger
	every time.Duration

	kick chan struct{} // a waiter asks for a sync now
	stop context.CancelFunc
	done chan struct{}

	mu sync.Mutex
	// next is the sync that waiters join: it starts after they joined,
	// so it covers their commits. One sync serves every waiter of a
	// group commit.
	next    *round
	started time.Time // when replicating began
	// covered: every commit made before it is in the replica (the start
	// of the last sync that succeeded); zero before one has.
	covered  time.Time
	lastSync time.Time // when that sync ended
	failing  error     // the last sync's error; nil once one succeeds
	errors   int64     // syncs that failed
}

// round is one sync: done closes when it ended, with err.
type round struct {
	done chan struct{}
	err  error
}

func newRound() *round { return &round{done: make(chan struct{})} }

// Start begins replicating the database at opts.Path. A replica that
// cannot be reached now is an error: a server that would not survive its
// machine should not start as if it would.
func Start(ctx context.Context, opts Options) (*Replicator, error) {
	c, err := client(opts.URL)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "replica")
	c.SetLogger(log)
	if err := reach(ctx, opts.URL, c); err != nil {
		return nil, fmt.Errorf("%s cannot be reached: %w", Redact(opts.URL), err)
	}
	if err := claim(ctx, opts.URL, c, opts.StoreID); err != nil {
		return nil, err
	}
	every := opts.Every
	if every <= 0 {
		every = time.Second
	}
	db := litestream.NewDB(opts.Path)
	db.MonitorInterval = every
	db.Replica = litestream.NewReplicaWithClient(db, c)
	// The Replicator's loop ships; Litestream's own would hide the errors.
	db.Replica.MonitorEnabled = false
	store := litestream.NewStore([]*litestream.DB{db}, litestream.DefaultCompactionLevels)
	if opts.SnapshotInterval > 0 {
		store.SnapshotInterval = opts.SnapshotInterval
	}
	if opts.Retention > 0 {
		store.SnapshotRetention = opts.Retention
	}
	store.Logger = log
	db.SetLogger(log)
	if err := store.Open(ctx); err != nil {
		return nil, fmt.Errorf("%s: start replicating: %w", Redact(opts.URL), err)
	}
	r := &Replicator{store: store, db: db, clock: opts.Clock, log: log, every: every,
		kick: make(chan struct{}, 1), done: make(chan struct{}), next: newRound()}
	if r.clock == nil {
		r.clock = intake.SystemClock{}
	}
	r.started = r.clock.Now()
	lctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go r.loop(lctx)
	return r, nil
}

// loop syncs when Litestream has new transactions, when a waiter asks,
// and every r.every; after a failure, every r.every (waiters are answered
// ErrUnreachable meanwhile).
func (r *Replicator) loop(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	notify := r.db.Notify()
	var failed bool
	for {
		if failed {
			// Waiters are answered at once while syncs fail (Sync): one
			// that asks came after a sync succeeded (syncOnce elsewhere).
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			case <-tick.C:
			}
		} else {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			case <-notify:
			case <-tick.C:
			}
		}
		notify = r.db.Notify()
		failed = r.syncOnce(ctx) != nil
	}
}

// syncOnce ships every commit made so far, and ends the round its
// waiters joined.
func (r *Replicator) syncOnce(ctx context.Context) error {
	r.mu.Lock()
	g := r.next
	r.next = newRound()
	r.mu.Unlock()
	start := r.clock.Now()
	err := r.db.SyncAndWait(ctx)
	end := r.clock.Now()
	r.mu.Lock()
	if err != nil && ctx.Err() != nil {
		// Stopping: Close ships what is left.
	} else if err != nil {
		if r.failing == nil {
			r.log.Warn("the replica cannot be reached: commits since are on this disk only", "err", err)
		}
		r.errors++
		r.failing = err
		// Those who joined the next sync meanwhile are answered now: the
		// loop tries again only every r.every.
		pending := r.next
		r.next = newRound()
		pending.err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		close(pending.done)
	} else {
		if r.failing != nil {
			r.log.Info("the replica is reachable again", "failed_syncs", r.errors)
		}
		r.covered, r.lastSync, r.failing = start, end, nil
	}
	r.mu.Unlock()
	g.err = err
	close(g.done)
	return err
}

// ErrUnreachable is Sync's answer while syncs fail: what is committed now
// is on this machine's disk only.
var ErrUnreachable = errors.New("the replica cannot be reached")

// Sync returns once every commit made before it was called is in the
// replica, or with the error of the sync that was to ship them. Callers
// waiting at once share one sync. While syncs fail, Sync answers
// ErrUnreachable at once; the loop tries again every Options.Every.
func (r *Replicator) Sync(ctx context.Context) error {
	r.mu.Lock()
	g, failing := r.next, r.failing
	r.mu.Unlock()
	if failing != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, failing)
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return errors.New("replica: stopped")
	}
}

// Status is how the replica stands.
type Status struct {
	// Lag is how long ago the replica last held every commit made by
	// then; since replicating began while no sync has succeeded.
	Lag time.Duration
	// LastSync is when the last successful sync ended; zero: none yet.
	LastSync time.Time
	// Errors counts the syncs that failed.
	Errors int64
	// Err is the last sync's error while syncs fail; nil otherwise.
	Err error
}

// Status tells how far behind the replica is.
func (r *Replicator) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	since := r.covered
	if since.IsZero() {
		since = r.started
	}
	return Status{Lag: max(0, r.clock.Now().Sub(since)), LastSync: r.lastSync, Errors: r.errors, Err: r.failing}
}

// markKey names the object beside the replicated database that holds the
// id of the store it is.
const markKey = "intake-store"

// claim makes sure the replica at u holds the store id or nothing, and
// marks it as id's. Shipping one store's pages on top of another's would
// leave a replica that restores neither.
func claim(ctx context.Context, u string, c litestream.ReplicaClient, id string) error {
	if id == "" {
		return errors.New("replica: no store id")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	held, err := readMark(ctx, u)
	if err != nil {
		return fmt.Errorf("%s: read which store it holds: %w", Redact(u), err)
	}
	switch {
	case held == id:
		return nil
	case held != "":
		return fmt.Errorf("%s holds another store (%s; this one is %s): give it a location of its own, or restore from it into a data directory that holds no store", Redact(u), held, id)
	}
	for _, level := range []int{0, litestream.SnapshotLevel} {
		info, err := litestream.NewReplicaWithClient(nil, c).MaxLTXFileInfo(ctx, level)
		if err != nil {
			return fmt.Errorf("%s: %w", Redact(u), err)
		}
		if info.MaxTXID > 0 {
			return fmt.Errorf("%s holds a database no intake store marked as its own: give the store a location of its own", Redact(u))
		}
	}
	if err := writeMark(ctx, u, id); err != nil {
		return fmt.Errorf("%s: mark it as this store's: %w", Redact(u), err)
	}
	return nil
}

// readMark is the store id the replica at u is marked with; "": none.
func readMark(ctx context.Context, u string) (string, error) {
	if root, ok := strings.CutPrefix(u, "file://"); ok {
		b, err := os.ReadFile(filepath.Join(filepath.Clean(root), markKey))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return strings.TrimSpace(string(b)), err
	}
	b, err := blob.Open(ctx, u)
	if err != nil {
		return "", err
	}
	r, _, err := b.Open(ctx, markKey)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer r.Close()
	id, err := io.ReadAll(io.LimitReader(r, 1<<10))
	return strings.TrimSpace(string(id)), err
}

func writeMark(ctx context.Context, u, id string) error {
	if root, ok := strings.CutPrefix(u, "file://"); ok {
		root = filepath.Clean(root)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, markKey), []byte(id+"\n"), 0o600)
	}
	b, err := blob.Open(ctx, u)
	if err != nil {
		return err
	}
	return b.Put(ctx, markKey, strings.NewReader(id+"\n"), int64(len(id)+1))
}

// Close ships what is left, stops replicating and lets go of the
// database; the store must be closed first.
func (r *Replicator) Close(ctx context.Context) error {
	r.stop()
	<-r.done
	return r.store.Close(ctx)
}

// Restore rebuilds the database at path from the replica at u, as it was
// at the time at (zero: its latest). path must not exist. A replica with
// no database in it is ErrEmpty.
func Restore(ctx context.Context, u, path string, at time.Time, log *slog.Logger) error {
	c, err := client(u)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	c.SetLogger(log)
	if err := reach(ctx, u, c); err != nil {
		return fmt.Errorf("%s cannot be reached: %w", Redact(u), err)
	}
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = path
	opt.Timestamp = at
	opt.IntegrityCheck = litestream.IntegrityCheckQuick
	err = litestream.NewReplicaWithClient(nil, c).Restore(ctx, opt)
	if errors.Is(err, litestream.ErrTxNotAvailable) || errors.Is(err, litestream.ErrNoSnapshots) {
		return ErrEmpty
	}
	if err != nil {
		return fmt.Errorf("%s: restore: %w", Redact(u), err)
	}
	return nil
}

// LocalState is the directory beside the database at path where the
// replicator keeps what it has shipped; a database restored in its place
// must not inherit it.
func LocalState(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+litestream.MetaDirSuffix)
}

// Redact is u for a log line or an error: its credentials as redact.URL
// shows them, and without its query, where nothing secret belongs but an
// endpoint's address makes it long.
func Redact(u string) string {
	s, _, _ := strings.Cut(u, "?")
	return redact.URL(s)
}

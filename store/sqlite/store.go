// Package sqlite is intake's embedded store: one SQLite file under the data
// directory, in WAL mode with a full fsync on every commit. All writes go
// through one connection; concurrent ingests share its commits.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/changes"
	"github.com/intakehq/intake/internal/notify"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure the store.
type Options struct {
	// Path of the database file; its directory is created.
	Path string
	// MaxBatch bounds how many ingests share one commit (default 256).
	MaxBatch int
	// Readers is the size of the read pool (default 4).
	Readers int
	// OperatorReaders is the size of the pool operators' reads run on
	// (contexts marked intake.OperatorRead), apart from the pipeline's
	// readers so that reads never hold one it waits for (default 4).
	OperatorReaders int
	// Replicated leaves the checkpoints to the replicator shipping the
	// WAL (package replica): the writer never copies the WAL back into
	// the database file, not even at open, so no frame leaves the WAL
	// before the replicator has read it.
	Replicated bool
}

// Store is the SQLite implementation of intake.Store.
type Store struct {
	write *sql.DB // exactly one connection: SQLite has one writer
	read  *sql.DB
	reads *sql.DB // operators' reads
	hub   notify.Hub
	jobs  chan writeJob
	batch int

	stmts map[string]*sql.Stmt // the writer's prepared statements: the hot ones at open, others after first use
	// missed are statements run unprepared since the writer last prepared;
	// unpreparable, those that failed to (their error shows where they run).
	missed, unpreparable map[string]bool
	// statements counts those the writer ran in its transactions, for
	// measuring what a webhook costs.
	statements atomic.Int64
	stop       chan struct{}
	done       chan struct{}
	indexDone  chan struct{} // closed once the search indexer stopped
	// foreground counts the writes other than the search indexer's, so it
	// can tell when it shares the writer.
	foreground atomic.Int64

	changes changes.Counter
}

var _ intake.Store = (*Store)(nil)

// Open opens (creating if needed) and migrates the database at opts.Path.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("sqlite: no path")
	}
	if opts.Replicated && !replicable {
		return nil, errors.New("sqlite: replication needs intake built without the sqlite_cgo tag (on modernc.org/sqlite, as the replicator is)")
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.OperatorReaders <= 0 {
		opts.OperatorReaders = 4
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, err
	}
	// Bodies and sealed secrets live here: private to the owner. SQLite
	// gives its -wal and -shm files the database file's mode.
	f, err := os.OpenFile(opts.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		if err := create(ctx, opts.Path); err != nil {
			return nil, err
		}
	}
	autocheckpoint := walCheckpointBytes / pageSize
	if opts.Replicated {
		autocheckpoint = 0
	}
	write, err := openDB(opts.Path, true, "journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(ON)",
		"temp_store(MEMORY)", fmt.Sprintf("wal_autocheckpoint(%d)", autocheckpoint))
	if err != nil {
		return nil, err
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	if err := migrate(ctx, write); err != nil {
		write.Close()
		return nil, err
	}
	// The store's identity, made once: a replica names the store it holds.
	if _, err := write.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES (?, lower(hex(randomblob(16))))
		ON CONFLICT (name) DO NOTHING`, storeID); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: store id: %w", err)
	}
	// Start with an empty WAL: whatever the last run and the migrations
	// left there goes into the database file now, before any request.
	// Replicated, the replicator does that once it has shipped them.
	if !opts.Replicated {
		if _, err := write.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			write.Close()
			return nil, fmt.Errorf("sqlite: checkpoint: %w", err)
		}
	}
	readPragmas := []string{"busy_timeout(10000)", "query_only(1)"}
	read, err := openDB(opts.Path, false, readPragmas...)
	if err != nil {
		write.Close()
		return nil, err
	}
	read.SetMaxOpenConns(opts.Readers)
	read.SetMaxIdleConns(opts.Readers)
	reads, err := openDB(opts.Path, false, readPragmas...)
	if err != nil {
		read.Close()
		write.Close()
		return nil, err
	}
	reads.SetMaxOpenConns(opts.OperatorReaders)
	reads.SetMaxIdleConns(opts.OperatorReaders)
	s := &Store{
		write: write,
		read:  read,
		reads: reads,
		jobs:  make(chan writeJob, 4*opts.MaxBatch),
		batch: opts.MaxBatch,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),

		indexDone: make(chan struct{}),
	}
	s.missed, s.unpreparable = map[string]bool{}, map[string]bool{}
	if s.stmts, err = prepare(ctx, write); err != nil {
		reads.Close()
		read.Close()
		write.Close()
		return nil, err
	}
	go s.commitLoop()
	go s.indexLoop()
	return s, nil
}

// pageSize is the page size of a new database. A 2 KiB webhook body takes
// a whole page of SQLite's default 4 KiB but a third of an 8 KiB one, so a
// group commit of ingests writes far fewer WAL frames (each a write and a
// checksum of its own): BenchmarkIngest in this package measured 29 CPU-µs
// per stored message at 4 KiB, 21 at 8 KiB and 20 at 16 KiB. 8 KiB keeps
// the small transactions of settling and routing from writing 16 KiB
// frames. An existing database keeps the page size it was created with.
const pageSize = 8192

// walCheckpointBytes is how far the WAL grows before the writer copies it
// back into the database: SQLite's default of 1 000 pages of 4 KiB, kept in
// bytes whatever the page size, so a small disk fills no sooner.
const walCheckpointBytes = 4000 << 10

// create sets the page size of a new, empty database file; it must be set
// before the file turns to WAL mode, after which it is fixed.
func create(ctx context.Context, path string) error {
	db, err := openDB(path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d; PRAGMA journal_mode = WAL", pageSize))
	return err
}

func migrate(ctx context.Context, db *sql.DB) error {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, dir)
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}

// Close stops the committer (failing ingests still queued) and closes the
// database.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	<-s.indexDone
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, s.reads.Close(), s.read.Close(), s.write.Close())...)
}

// StorageBytes is the size of the database's used pages.
func (s *Store) StorageBytes(ctx context.Context) (int64, error) {
	var pages, free, size int64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT p.page_count, f.freelist_count, z.page_size
		FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() z`).Scan(&pages, &free, &size)
	return (pages - free) * size, err
}

// reader is the pool a read on ctx runs on: operators' reads on their
// own, the pipeline's on the read pool.
func (s *Store) reader(ctx context.Context) *sql.DB {
	if intake.IsOperatorRead(ctx) {
		return s.reads
	}
	return s.read
}

// Ping reports whether the writer can serve.
func (s *Store) Ping(ctx context.Context) error { return s.write.PingContext(ctx) }

// Listen wakes on commits of topic's work.
func (s *Store) Listen(topic string) (<-chan struct{}, func()) { return s.hub.Listen(topic) }

// classify gives a storage failure its code: unreachable storage is
// EUNAVAILABLE (callers answer 503 and retry), a unique key a racing writer
// took is ECONFLICT, anything else internal; intake errors pass through.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ie *intake.Error
	if errors.As(err, &ie) {
		return err
	}
	if unreachable(err) {
		return intake.Unavailable(err)
	}
	if code, msg, ok := sqliteError(err); ok && code == sqliteConstraintUnique {
		return &intake.Error{Code: intake.ECONFLICT, Message: "that is taken already (" + strings.TrimPrefix(msg, "constraint failed: ") + ")", Err: err}
	}
	return &storageError{err}
}

// unreachable reports whether err says the database file cannot be used
// right now (closed, busy past the timeout, full, read-only or failing I/O),
// as against a statement it refused.
func unreachable(err error) bool {
	if errors.Is(err, errClosed) {
		return true
	}
	if code, _, ok := sqliteError(err); ok {
		switch code & 0xff {
		case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteFull, sqliteCantOpen, sqliteReadOnly:
			return true
		}
	}
	return false
}

// SQLite's result codes (sqlite3.h) that classify tells apart, whichever
// driver reports them; an extended code's low byte is its primary code.
const (
	sqliteBusy             = 5
	sqliteLocked           = 6
	sqliteReadOnly         = 8
	sqliteIOErr            = 10
	sqliteFull             = 13
	sqliteCantOpen         = 14
	sqliteConstraintUnique = 2067
)

type storageError struct{ err error }

func (e *storageError) Error() string { return "sqlite: " + e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

// Times are stored as Unix microseconds, UTC.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromTS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

func notFound(what, id string) error {
	return intake.Errorf(intake.ENOTFOUND, "%s %s not found", what, id)
}

// Package postgres is intake's scale-out store: any number of intake
// processes share one PostgreSQL database. Workers claim rows with
// FOR UPDATE SKIP LOCKED, commits that create work wake every process
// through LISTEN/NOTIFY, concurrent ingests share commits, and an org's API
// requests run under row-level security.
package postgres

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/changes"
	"github.com/intakehq/intake/internal/notify"
	"github.com/intakehq/intake/internal/outage"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure the store.
type Options struct {
	// URL is the database URL (postgres://user:pass@host:port/db?…). The role
	// runs the migrations, so it owns the tables.
	URL string
	// MaxBatch bounds how many ingests share one commit (default 256).
	MaxBatch int
	// MaxConns is the pool size (default 16, or the URL's pool_max_conns).
	MaxConns int32
	// ReadConns is the size of the pool operators' reads run on (contexts
	// marked intake.OperatorRead), apart from the pipeline's (default a
	// quarter of MaxConns, at least 4), so reads never take a connection
	// the pipeline waits for; ReadTimeout is their statement_timeout
	// (default 5s).
	ReadConns   int32
	ReadTimeout time.Duration
	// IdleInTransaction is how long one of the store's transactions may
	// wait on its process between statements before PostgreSQL ends it
	// (idle_in_transaction_session_timeout; default 30s), giving its row
	// locks back. Claims skip locked rows, so a process frozen inside a
	// transaction (SIGSTOP, a paused VM) would otherwise keep the rows it
	// holds from every other process, past its leases, for as long as it
	// stays frozen.
	IdleInTransaction time.Duration
	// Logger receives the notification listener's reconnects and failed
	// tries for leadership.
	Logger *slog.Logger
	// Tracer, when set, sees every statement the pool's connections run
	// (and every batch, when it is also a pgx.BatchTracer): for
	// measurements such as the round trips a webhook costs.
	Tracer pgx.QueryTracer
	// CommitWait bounds how long Ingest waits for its commit before it
	// answers unavailable (default 5s).
	CommitWait time.Duration
	// Outage, when set, is told of each statement that could not reach
	// PostgreSQL and of each answer, so an outage is logged once.
	Outage *outage.Watch
	// CallerClock times leases and due times by the now each call passes
	// instead of PostgreSQL's clock: for tests that step a clock past
	// leases and backoffs. Left false, as intake serves, a lease is taken,
	// judged and ended, and a message, event or call made due (at once or
	// after its backoff) and judged due, by the database's clock alone: a
	// caller names a delay (or an instant decided by its clock with the
	// now it passes, kept as the delay from that now). Processes whose
	// clocks disagree (one jumped an hour ahead, or back) agree on every
	// lease and every retry's time.
	CallerClock bool
}

// DefaultCommitWait is how long an ingest waits for its commit unless
// Options say otherwise: well within the 10 s most providers wait for an
// answer.
const DefaultCommitWait = 5 * time.Second

// Store is the PostgreSQL implementation of intake.Store.
type Store struct {
	pool  *pgxpool.Pool
	reads *pgxpool.Pool // operators' reads: read only, statement_timeout set
	hub   notify.Hub
	// instance is the payload of this store's notifications, so its own
	// listener skips what the hub already delivered.
	instance string
	log      *slog.Logger
	outage   *outage.Watch
	// commitWait bounds an ingest's wait for its commit.
	commitWait time.Duration
	// callerClock: Options.CallerClock.
	callerClock bool

	ingest         batches[*ingestRequest]
	messageSettles batches[messageSettleRequest]
	routeSettles   batches[routeSettleRequest]
	stop           chan struct{}
	done           chan struct{}

	stopListen context.CancelFunc // stops the listener and the search indexer
	listenDone chan struct{}
	listening  chan struct{} // closed once the listener first listens
	heard      sync.Once
	indexDone  chan struct{}
	// foreground counts the pipeline's commits (ingests, settles), so
	// that the search indexer rests while they come.
	foreground atomic.Int64

	changes changes.Counter
	// bodiesWalk and messagesWalk are where retention's walks resume.
	bodiesWalk, messagesWalk resumeAt
	// exactBelow is where Stats starts to estimate the settled states.
	exactBelow int
}

var _ intake.Store = (*Store)(nil)

// Notification channels, one per wake-up topic.
var channels = map[string]string{
	intake.TopicMessages: "intake_messages",
	intake.TopicEvents:   "intake_events",
	intake.TopicRoutes:   "intake_routes",
}

// migrationLock is the advisory lock the migrations run under, so processes
// starting together migrate once.
const migrationLock int64 = 0x696e74616b65 // "intake"

// Open connects, applies the migrations under an advisory lock, and starts
// the ingest committer and the notification listener.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.URL == "" {
		return nil, errors.New("postgres: no URL")
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(opts.URL, "pool_max_conns"):
		cfg.MaxConns = 16
	}
	boundedClose(&cfg.ConnConfig.Config)
	// A 2xx means the webhook is on disk: whatever the server's default,
	// every commit of this store waits for its WAL flush.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(cmp.Or(opts.IdleInTransaction, 30*time.Second).Milliseconds(), 10)
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "intake"
	}
	switch {
	case opts.Tracer != nil && opts.Outage != nil:
		cfg.ConnConfig.Tracer = multitracer.New(opts.Tracer, health{opts.Outage})
	case opts.Tracer != nil:
		cfg.ConnConfig.Tracer = opts.Tracer
	case opts.Outage != nil:
		cfg.ConnConfig.Tracer = health{opts.Outage}
	}
	readCfg := cfg.Copy()
	readCfg.MaxConns = cmp.Or(opts.ReadConns, max(4, cfg.MaxConns/4))
	readCfg.MinConns = 0
	readCfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cmp.Or(opts.ReadTimeout, 5*time.Second).Milliseconds(), 10)
	// Read only once connected, not as a startup parameter: a URL's
	// target_session_attrs=read-write (a multi-host URL that follows a
	// failover) asks each server whether its session is read only, and a
	// session that starts read only would be refused on every server.
	readCfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET default_transaction_read_only = on")
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	reads, err := pgxpool.NewWithConfig(ctx, readCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	listenCtx, stopListen := context.WithCancel(context.Background())
	s := &Store{
		pool:           pool,
		reads:          reads,
		instance:       rand.Text(),
		log:            opts.Logger,
		outage:         opts.Outage,
		commitWait:     cmp.Or(opts.CommitWait, DefaultCommitWait),
		callerClock:    opts.CallerClock,
		ingest:         newBatches[*ingestRequest](opts.MaxBatch, 4*opts.MaxBatch),
		routeSettles:   newBatches[routeSettleRequest](routeSettleBatch, routeSettleBatch),
		messageSettles: newBatches[messageSettleRequest](messageSettleBatch, messageSettleBatch),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
		stopListen:     stopListen,
		listenDone:     make(chan struct{}),
		listening:      make(chan struct{}),
		indexDone:      make(chan struct{}),
		exactBelow:     exactBelow,
	}
	go s.commitLoop()
	go s.listen(listenCtx)
	go s.indexLoop(listenCtx)
	// The store hears other processes' changes from when it is open: Open
	// waits for the listener's first LISTEN (the change counter moves once
	// then, for what went unheard before), for as long as ctx allows and
	// at most firstListenWait; past it the listener goes on trying.
	wait := time.NewTimer(firstListenWait)
	defer wait.Stop()
	select {
	case <-s.listening:
	case <-wait.C:
	case <-ctx.Done():
	}
	return s, nil
}

// firstListenWait bounds Open's wait for the notification listener.
const firstListenWait = 5 * time.Second

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	// Retried every second for up to ten minutes while another process
	// migrates.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLock), lock.WithLockTimeout(1, 600))
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// Close stops the committers and settlers (failing ingests and settles
// still queued) and the
// listener, and closes the pool.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	s.stopListen()
	<-s.listenDone
	<-s.indexDone
	s.reads.Close()
	s.pool.Close()
	return nil
}

// StorageBytes is the size of the database on the server's disk (tables,
// indexes, TOAST; not the WAL), for the storage quota.
func (s *Store) StorageBytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	return n, classify(err)
}

// Ping reports whether the database can serve.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Listen wakes on commits of topic's work, in this process or any other on
// the same database.
func (s *Store) Listen(topic string) (<-chan struct{}, func()) { return s.hub.Listen(topic) }

// querier is what the pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// retries bounds how often a transaction is re-run after PostgreSQL
// refused it for a reason a second try can pass (a serialization failure,
// a deadlock, a race lost to a concurrent commit).
const retries = 5

// tx runs fn in a transaction as the connecting role: staff views and the
// workers, which row-level security does not bind.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.scopedTx(ctx, intake.Scope{}, fn)
}

// scopedTx runs fn in a transaction. When sc names an org, the transaction
// runs as intake_tenant with intake.org_id set, so row-level security
// confines every statement in it to that org.
func (s *Store) scopedTx(ctx context.Context, sc intake.Scope, fn func(pgx.Tx) error) error {
	for try := 1; ; try++ {
		err := s.runTx(ctx, sc, fn)
		if err == nil || try == retries || !retryable(err) || ctx.Err() != nil {
			return classify(err)
		}
	}
}

func (s *Store) runTx(ctx context.Context, sc intake.Scope, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if !sc.Staff() {
		if _, err := tx.Exec(ctx, scopeSQL, sc.OrgID); err != nil {
			return err
		}
	}
	ct := &changeTx{Tx: tx}
	if err := fn(ct); err != nil {
		return err
	}
	err = tx.Commit(ctx)
	if ct.changed {
		// Even after a failed commit: whether it landed is unknown, and a
		// needless move costs caches one reload.
		s.changes.Move()
	}
	return err
}

// scopeSQL confines the rest of a transaction to one org: its statements
// run as intake_tenant, which row-level security binds to intake.org_id.
const scopeSQL = `SELECT set_config('role', 'intake_tenant', true), set_config('intake.org_id', $1, true)`

// read runs the reads queue puts in a batch, in one round trip and one
// transaction, with sc's visibility: as the connecting role for staff; for
// an org with the org's scope set, so row-level security confines them
// however their SQL reads. A failed statement leaves that connection in an
// aborted transaction, which the pool then discards.
func (s *Store) read(ctx context.Context, sc intake.Scope, queue func(*pgx.Batch)) error {
	b := &pgx.Batch{}
	b.Queue(beginRead)
	if !sc.Staff() {
		b.Queue(scopeSQL, sc.OrgID)
	}
	queue(b)
	b.Queue(`COMMIT`)
	return classify(s.poolFor(ctx).SendBatch(ctx, b).Close())
}

// beginRead starts a read's transaction on one snapshot, so every query
// of a read sees the same moment: a read of a type's counts and its
// changes, or of a message and its events, never shows half of a commit
// that wrote both. A read-only transaction takes no locks and never fails
// to serialize.
const beginRead = `BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ`

// poolFor is the pool a read on ctx runs on: operators' reads on their
// own, the pipeline's on the main pool.
func (s *Store) poolFor(ctx context.Context) *pgxpool.Pool {
	if intake.IsOperatorRead(ctx) {
		return s.reads
	}
	return s.pool
}

// readPlanned is read for lists whose filters are optional: each is
// planned for the values it is given, so a search uses the index that
// serves it, where a plan cached for any values would read every row.
func (s *Store) readPlanned(ctx context.Context, sc intake.Scope, queue func(*pgx.Batch)) error {
	b := &pgx.Batch{}
	b.Queue(beginRead)
	forCustomPlans(b)
	if !sc.Staff() {
		b.Queue(scopeSQL, sc.OrgID)
	}
	queue(b)
	b.Queue(`COMMIT`)
	return classify(s.poolFor(ctx).SendBatch(ctx, b).Close())
}

// queueRows queues a query whose rows scan reads into *out.
func queueRows[T any](b *pgx.Batch, out *[]T, scan func(pgx.Row) (T, error), sql string, args ...any) {
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
		return err
	})
}

// errRace marks a transaction that lost a race it can win on a second try.
var errRace = errors.New("postgres: a concurrent transaction committed the same row first")

func retryable(err error) bool {
	if errors.Is(err, errRace) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
	}
	return false
}

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
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" { // query_canceled: statement_timeout, or a cancel
		return &intake.Error{Code: intake.EUNAVAILABLE, Message: "the read ran past its deadline and was stopped; narrow it", Err: err}
	}
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return &intake.Error{Code: intake.ECONFLICT, Message: "that is taken already (" + pe.ConstraintName + ")", Err: err}
	}
	return &storageError{err}
}

// unreachable reports whether err says PostgreSQL could not be reached or
// went away (as against a statement it refused): the server is down,
// restarting, out of connections, or the network between is broken.
func unreachable(err error) bool {
	var (
		pe *pgconn.PgError
		ce *pgconn.ConnectError
		ne net.Error
	)
	switch {
	case endedIdle(err):
		return true
	case errors.As(err, &pe):
		// Class 08 is connection exceptions; 57P01-03 a server shutting
		// down or starting; 53300 too many connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code == "53300"
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE), errors.Is(err, errClosed):
		return true
	}
	return false
}

// endedIdle reports whether PostgreSQL ended the connection err came on
// because it sat idle past a timeout: in a transaction (25P03,
// idle_in_transaction_session_timeout, which intake sets to the lease) or
// at all (57P05, idle_session_timeout). The statement was not run, so its
// caller retries as for any connection gone; but PostgreSQL answered, so
// it says nothing of an outage now. It is how a partition longer than the
// timeout ends for the transactions it held: told once the link is back.
func endedIdle(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "25P03" || pe.Code == "57P05")
}

type storageError struct{ err error }

func (e *storageError) Error() string { return "postgres: " + e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

// clockNow is the argument a statement that takes or judges a lease or a
// due time reads its now from, as coalesce($n::timestamptz,
// statement_timestamp()): NULL, PostgreSQL's clock, unless the store is
// timed by the caller's (CallerClock).
func (s *Store) clockNow(now time.Time) any {
	if s.callerClock {
		return ts(now)
	}
	return nil
}

// queueClock queues into b, unless the store is timed by the caller's
// clock, a read of PostgreSQL's clock into *at, for a settle or a claim
// that decides in Go: what it decides (a retry's due time, a breaker's
// probe, a rate's refill) is then timed by the clock every process
// shares. With CallerClock it queues nothing and *at keeps the caller's
// now.
func (s *Store) queueClock(b *pgx.Batch, at *time.Time) {
	if s.callerClock {
		return
	}
	b.Queue(`SELECT statement_timestamp()`).QueryRow(func(row pgx.Row) error {
		var t time.Time
		if err := row.Scan(&t); err != nil {
			return err
		}
		*at = t.UTC()
		return nil
	})
}

// rebase moves t, an instant the caller decided by its clock at from, to
// as long after to: a due time kept as its delay. The zero time stays.
func rebase(t, from, to time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return to.Add(t.Sub(from))
}

// micros is a lease's length as the statements take it, multiplied by
// interval '1 microsecond'.
func micros(d time.Duration) int64 { return d.Microseconds() }

// ts is a time as a parameter: NULL for the zero time, else UTC rounded
// down to the microsecond, as the SQLite store keeps it.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}

// fromTS reads a nullable timestamptz in UTC.
func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullID is an id parameter: NULL for "", so optional filters and
// references read `$n::uuid IS NULL`.
func nullID(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// fromID reads a nullable uuid.
func fromID(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// text makes a string storable as PostgreSQL text, which holds neither NUL
// bytes nor invalid UTF-8 (SQLite holds both). Fields that come from
// providers go through it, so a hostile byte cannot make a commit fail.
func text(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// validUTF8 makes JSON storable: PostgreSQL refuses invalid UTF-8 in it.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

func texts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = text(s)
	}
	return out
}

func notFound(what, id string) error {
	return intake.Errorf(intake.ENOTFOUND, "%s %s not found", what, id)
}

// validIDs reports whether every id is a UUID; a lookup of anything else
// finds nothing rather than failing the query.
func validIDs(ids ...string) bool {
	for _, s := range ids {
		if !intake.ValidID(s) {
			return false
		}
	}
	return true
}

package inboxcheck

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/inbox"
	"github.com/intakehq/intake/internal/mysqltest"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// testDB is an empty database of one dialect, of the test's own.
type testDB struct {
	dialect string
	driver  string
	dsn     string
	db      *sql.DB
}

// reopen opens another pool on the same database (a restarted process's).
func (d testDB) reopen(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open(d.driver, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sqliteDSN is the DSN the README recommends for SQLite: WAL, a writer
// that waits its turn, and transactions that take the write lock at BEGIN.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
}

// openers make a fresh database of each dialect: SQLite in a file, and on
// the PostgreSQL and MariaDB servers (which fail the test under CI=true
// when unreachable).
var openers = []struct {
	dialect, driver string
	dsn             func(t testing.TB) string
}{
	{"sqlite", "sqlite", func(t testing.TB) string { return sqliteDSN(filepath.Join(t.TempDir(), "app.db")) }},
	{"postgres", "pgx", func(t testing.TB) string { return pgtest.Database(t) }},
	{"mysql", "mysql", func(t testing.TB) string { return mysqltest.Database(t) }},
}

// eachDatabase runs test once per dialect, each on a fresh database.
func eachDatabase(t *testing.T, test func(t *testing.T, d testDB)) {
	for _, o := range openers {
		t.Run(o.dialect, func(t *testing.T) {
			d := testDB{dialect: o.dialect, driver: o.driver, dsn: o.dsn(t)}
			d.db = d.reopen(t)
			test(t, d)
		})
	}
}

// committing opens another pool on d's database that calls onCommit in
// each transaction's Commit, once the database has committed and before
// the code that committed goes on: the test sees the database as others
// do the moment a commit is made, whatever the committer does next.
func (d testDB) committing(t testing.TB, onCommit func()) *sql.DB {
	db := sql.OpenDB(hookedConnector{drv: d.db.Driver(), dsn: d.dsn, onCommit: onCommit})
	t.Cleanup(func() { db.Close() })
	return db
}

// hookedConnector opens the driver's connections with their commits
// hooked; the rest of each connection is the driver's own.
type hookedConnector struct {
	drv      driver.Driver
	dsn      string
	onCommit func()
}

func (c hookedConnector) Driver() driver.Driver { return c.drv }

func (c hookedConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return hookedConn{conn, c.onCommit}, nil
}

// hookedConn needs its driver's conn to begin, execute and query with a
// context, as the three drivers the tests use all do.
type hookedConn struct {
	driver.Conn
	onCommit func()
}

func (c hookedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return hookedTx{tx, c.onCommit}, nil
}

func (c hookedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c hookedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

type hookedTx struct {
	driver.Tx
	onCommit func()
}

func (tx hookedTx) Commit() error {
	if err := tx.Tx.Commit(); err != nil {
		return err
	}
	tx.onCommit()
	return nil
}

// q writes a test's own SQL for the dialect: "?" placeholders become $n
// on PostgreSQL.
func (d testDB) q(query string) string {
	if d.dialect != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (d testDB) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.db.QueryRow(d.q(query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// applied is how many times the application applied event id.
func (d testDB) applied(t testing.TB, id string) int {
	return d.count(t, "SELECT count(*) FROM applied WHERE event_id = ?", id)
}

// records is how many event ids the inbox table holds.
func (d testDB) records(t testing.TB) int {
	return d.count(t, "SELECT count(*) FROM inbox_events")
}

// ledger is the application under test: each event it handles adds a row
// to its own table "applied" (no key on the event id, so a second
// application would show). It can be made to fail, and to hold its first
// call until released.
type ledger struct {
	d      testDB
	calls  atomic.Int32
	fail   atomic.Bool
	mu     sync.Mutex
	hold   chan struct{}    // closed to release a held call
	called chan inbox.Event // each call's event, when set
}

func newLedger(t testing.TB, d testDB) *ledger {
	t.Helper()
	if _, err := d.db.Exec(`CREATE TABLE IF NOT EXISTS applied (event_id varchar(255) NOT NULL, type varchar(255) NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &ledger{d: d}
}

func (l *ledger) apply(ctx context.Context, tx *sql.Tx, e inbox.Event) (inbox.Outcome, error) {
	l.calls.Add(1)
	if l.called != nil {
		l.called <- e
	}
	if _, err := tx.ExecContext(ctx, l.d.q("INSERT INTO applied (event_id, type) VALUES (?, ?)"), e.ID, e.Type); err != nil {
		return 0, err
	}
	l.mu.Lock()
	hold := l.hold
	l.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if l.fail.Load() {
		return 0, errors.New("the ledger is closed for the night")
	}
	if strings.HasSuffix(e.Type, ".ignored") {
		return inbox.Ignored, nil
	}
	return inbox.Handled, nil
}

// quiet keeps the failures the tests cause out of their output.
var quiet = slog.New(slog.DiscardHandler)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func (l *ledger) handler(t testing.TB, c *testkit.Clock) *inbox.Handler {
	return l.handlerOn(t, l.d.db, c)
}

// handlerOn is the inbox of the ledger on db, with secret, on clock c.
func (l *ledger) handlerOn(t testing.TB, db *sql.DB, c *testkit.Clock) *inbox.Handler {
	t.Helper()
	h, err := inbox.New(db, l.apply, inbox.Options{Secrets: []string{testSecret}, Dialect: l.d.dialect, Now: c.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sample is an event as intake delivers it.
func sample(id, typ string) intake.Envelope {
	return intake.NewEnvelope(&intake.Event{ID: id, Type: typ, Kind: intake.KindEvent, OrgID: "org_1", ConnectionID: "con_1",
		Provider: "stripe", ProviderEventID: "evt_" + id, MessageID: "msg_" + id, OccurredAt: t0.Add(-time.Minute), ReceivedAt: t0,
		Data: json.RawMessage(`{"amount":2000}`)})
}

// signedRequest is a delivery of body as event id, signed at at by
// intake's own signer under secret.
func signedRequest(t testing.TB, secret, id string, body []byte, at time.Time) *http.Request {
	t.Helper()
	sig, err := delivery.Sign(secret, id, at.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	r.Header.Set("webhook-signature", sig)
	return r
}

// answered is a delivery's answer: its status and JSON body.
type answered struct {
	status int
	body   map[string]any
	raw    string
}

func (a answered) code() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func serve(h http.Handler, r *http.Request) answered {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	a := answered{status: w.Code, raw: w.Body.String()}
	json.Unmarshal(w.Body.Bytes(), &a.body)
	return a
}

// deliver delivers env to h as intake would at at.
func deliver(t testing.TB, h http.Handler, env intake.Envelope, at time.Time) answered {
	t.Helper()
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return serve(h, signedRequest(t, testSecret, env.ID, body, at))
}

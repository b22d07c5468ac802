package faults

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"

	_ "modernc.org/sqlite" // the application's database

	"github.com/intakehq/intake/inbox"
)

// App is the consumer as an application built on package inbox is: each
// call verified under the consumer's signing secret and applied in a
// transaction on the application's own SQLite database, once per
// webhook-id. What it applies is written in that transaction to a table of
// its own, one row per application of a webhook, so a webhook applied
// twice is a duplicate effect the application itself would have, counted
// from its database. Every call is recorded in Sink too, as it arrives.
type App struct {
	Sink *Sink

	db      *sql.DB
	handler atomic.Pointer[inbox.Handler]
}

type appKey struct{}

// NewApp opens the application's database in dir. Its commits are
// durable against the application's crash, not the machine's
// (synchronous=NORMAL in WAL mode): the campaign's faults are intake's,
// and a consumer that fsyncs each event is what "recover" would time.
func NewApp(dir string, sink *Sink) (*App, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE applied (webhook TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return &App{Sink: sink, db: db}, nil
}

// Trust makes the application take calls signed under secret (the
// consumer's, known once it is created); until then it answers 503.
func (a *App) Trust(secret string) error {
	h, err := inbox.New(a.db, func(ctx context.Context, tx *sql.Tx, _ inbox.Event) (inbox.Outcome, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO applied (webhook) VALUES (?)`, ctx.Value(appKey{}))
		return inbox.Handled, err
	}, inbox.Options{Secrets: []string{secret}, Dialect: "sqlite",
		// A fault cuts calls off mid-transaction: each is a retry for
		// intake, counted in the tally, not an error to print.
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	a.handler.Store(h)
	return nil
}

func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the call broke off: intake saw no answer either
	}
	a.Sink.Record(body, r.Header.Get("webhook-id"))
	h := a.handler.Load()
	if h == nil {
		http.Error(w, "not yet taking calls", http.StatusServiceUnavailable)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appKey{}, a.Sink.Key(body))))
}

// Applied is how many times the application applied each webhook it
// applied.
func (a *App) Applied(ctx context.Context) (map[string]int, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT webhook, COUNT(*) FROM applied GROUP BY webhook`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			return nil, err
		}
		applied[key] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("the application's database: %w", err)
	}
	return applied, nil
}

// Close closes the application's database.
func (a *App) Close() error { return a.db.Close() }

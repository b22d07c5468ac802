package inboxcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/intakehq/intake/internal/testkit"
)

// The handler's cost per event on SQLite beside the application's own
// transaction alone (BEGIN, its insert, COMMIT): the difference is the
// inbox's (verify, decode, record the id, answer).
func BenchmarkHandlerPerEventOnSQLite(b *testing.B) {
	d := benchSQLite(b)
	l := newLedger(b, d)
	c := testkit.NewClock(t0)
	h := l.handler(b, c)
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		env := sample("evt-bench-"+strconv.Itoa(i), "stripe.invoice.paid")
		body, _ := json.Marshal(env)
		reqs[i] = signedRequest(b, testSecret, env.ID, body, c.Now())
	}
	b.ResetTimer()
	for i := range b.N {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i])
		if w.Code != http.StatusOK {
			b.Fatalf("answered %d %s", w.Code, w.Body)
		}
	}
}

func BenchmarkApplicationTransactionAloneOnSQLite(b *testing.B) {
	d := benchSQLite(b)
	newLedger(b, d)
	ctx := context.Background()
	for i := range b.N {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO applied (event_id, type) VALUES (?, ?)", fmt.Sprint("evt-bench-", i), "stripe.invoice.paid"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSQLite(b *testing.B) testDB {
	d := testDB{dialect: "sqlite", driver: "sqlite", dsn: sqliteDSN(filepath.Join(b.TempDir(), "app.db"))}
	d.db = d.reopen(b)
	return d
}

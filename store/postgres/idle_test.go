package postgres

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/outage"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestATransactionPostgresEndedForSittingIdleIsRetriedAndIsNoOutage: a
// partition longer than idle_in_transaction_session_timeout holds a
// transaction between its statements; PostgreSQL ends the connection, and
// the next statement, sent once the link is back, reads SQLSTATE 25P03.
// The statement was not run, so its caller is told to retry
// (unavailable); PostgreSQL answered, so the outage watch hears of no new
// outage, and the one that held the transaction is not told twice.
func TestATransactionPostgresEndedForSittingIdleIsRetriedAndIsNoOutage(t *testing.T) {
	ctx := context.Background()
	watch := outage.New("postgres", slog.New(slog.DiscardHandler), intake.SystemClock{})
	s := openWith(t, Options{URL: pgtest.Database(t), MaxConns: 2, IdleInTransaction: 200 * time.Millisecond, Outage: watch})
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // a hang guard
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("PostgreSQL did not end the connection idle in its transaction")
		}
	}
	_, err = tx.Exec(ctx, `SELECT 1`)
	if !endedIdle(err) {
		t.Fatalf("a statement on the connection PostgreSQL ended returned %v, want SQLSTATE 25P03", err)
	}
	if got := classify(err); intake.ErrorCode(got) != intake.EUNAVAILABLE {
		t.Errorf("classified as %v, want unavailable: the statement was not run and may be tried again", got)
	}
	if watch.Down() {
		t.Error("the outage watch took a connection PostgreSQL ended for sitting idle for an outage")
	}
	if err := s.pool.Ping(ctx); err != nil {
		t.Errorf("the pool after the ended connection: %v", err)
	}
}

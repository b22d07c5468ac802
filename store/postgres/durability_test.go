package postgres

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
)

// TestEveryPooledConnectionCommitsSynchronously makes the database's own
// default asynchronous commit, then asks every connection the store's pool
// hands out, at once and again after the pool replaced them: each must
// wait for the WAL flush, or a 2xx could name a webhook a crash of the
// server loses. A SIGKILL of intake cannot show this; only the setting can.
func TestEveryPooledConnectionCommitsSynchronously(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Database(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	const conns = 4
	s := openURL(t, db, conns)
	check := func(round string) {
		t.Helper()
		held := make([]*pgxpool.Conn, 0, conns)
		for range conns {
			c, err := s.pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for i, c := range held {
			var v string
			if err := c.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != "on" {
				t.Errorf("%s: pooled connection %d (pid %d) has synchronous_commit = %q, want on", round, i, c.Conn().PgConn().PID(), v)
			}
		}
		for _, c := range held {
			c.Release()
		}
	}
	check("first connections")
	// An org's transaction switches role: the setting must hold there too.
	var scoped string
	if err := s.scopedTx(ctx, intake.Scope{OrgID: intake.NewID()}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&scoped)
	}); err != nil {
		t.Fatal(err)
	}
	if scoped != "on" {
		t.Errorf("org-scoped transaction has synchronous_commit = %q, want on", scoped)
	}
	before := map[uint32]bool{}
	for _, c := range s.pool.AcquireAllIdle(ctx) {
		before[c.Conn().PgConn().PID()] = true
		c.Release()
	}
	s.pool.Reset() // closes every connection; the next ones are new
	check("replacement connections")
	for _, c := range s.pool.AcquireAllIdle(ctx) {
		if before[c.Conn().PgConn().PID()] {
			t.Errorf("connection %d survived the reset: the second round proves nothing", c.Conn().PgConn().PID())
		}
		c.Release()
	}
}

package postgres

import (
	"context"
	"io/fs"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/sweeper"
)

// idAt returns a UUIDv7 of time at.
func idAt(at time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// exec runs each statement with its arguments, failing the test on the
// first error.
func exec(t *testing.T, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, stmts ...stmt) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(context.Background(), q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

type stmt struct {
	sql  string
	args []any
}

// The rows of one message, as a test lays them down.
const (
	insertMessage = `INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state,
		attempt, max_attempts) VALUES ($1, $2, $2, $2, 'POST', '', 'd', $3, $4, 1, 6)`
	insertBody     = `INSERT INTO message_bodies (message_id, org_id, header, body, blob_key) VALUES ($1, $2, '{}', '', $3)`
	insertIdentity = `INSERT INTO message_identities (connection_id, key, org_id, digest, event_type, message_id)
		VALUES ($2, $1::uuid::text, $2, 'd', 't', $1::uuid)`
	insertEvent = `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at,
		received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
		VALUES ($1::uuid, $2, $2, $3, 'stripe', 't', 'event', 'evt_' || $1::uuid::text, $4, $4, '{}', false, '{}', $5, 1, 6, false, $4)`
	insertEventKey = `INSERT INTO event_keys (connection_id, provider_event_id, event_id, org_id) VALUES ($2, 'evt_' || $1::uuid::text, $1::uuid, $2)`
	insertRoute    = `INSERT INTO routes (event_id, consumer_id, org_id, state, next_at, order_at) VALUES ($1, $2, $2, $3, $4, $4)`
	insertDelivery = `INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at)
		VALUES ($1, $2, $3, $2, 1, 'retry', 500, 1, '', $4)`
)

// partitionOf names the partition that holds id in table.
func partitionOf(t *testing.T, s *Store, table, key, id string) string {
	t.Helper()
	var name string
	err := s.pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM `+table+` WHERE `+key+` = $1`, id).Scan(&name)
	if err == pgx.ErrNoRows {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestRetentionDropsWholeDaysAndKeepsWhatIsInFlight: a day holds a settled
// message with its body, event, route and delivery; a message still
// queued; and a settled message whose event is still being routed. Once
// the day is past retention, its partitions are gone; the settled rows
// with them, their bodies' objects pending deletes, their keys forgotten
// in batches; what is in flight is still there and leaves row by row once
// it settles.
func TestRetentionDropsWholeDaysAndKeepsWhatIsInFlight(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "acme")
	org := o.org.ID
	day := time.Date(2027, 3, 10, 0, 0, 0, 0, time.UTC)
	if _, err := s.ensureDays(ctx, day); err != nil {
		t.Fatal(err)
	}
	at := day.Add(12 * time.Hour)
	done, queued, routing := idAt(at), idAt(at.Add(time.Second)), idAt(at.Add(2*time.Second))
	eDone, eRouting := idAt(at.Add(time.Minute)), idAt(at.Add(2*time.Minute))
	exec(t, s.pool,
		stmt{insertMessage, []any{done, org, at, "processed"}},
		stmt{insertBody, []any{done, org, "k-done"}},
		stmt{insertIdentity, []any{done, org}},
		stmt{insertEvent, []any{eDone, org, done, at, "delivered"}},
		stmt{insertEventKey, []any{eDone, org}},
		stmt{insertRoute, []any{eDone, org, "delivered", at}},
		stmt{insertDelivery, []any{idAt(at), org, eDone, at}},

		stmt{insertMessage, []any{queued, org, at, "queued"}},
		stmt{insertBody, []any{queued, org, "k-queued"}},
		stmt{insertIdentity, []any{queued, org}},

		stmt{insertMessage, []any{routing, org, at, "processed"}},
		stmt{insertBody, []any{routing, org, "k-routing"}},
		stmt{insertIdentity, []any{routing, org}},
		stmt{insertEvent, []any{eRouting, org, routing, at, "retrying"}},
		stmt{insertEventKey, []any{eRouting, org}},
		stmt{insertRoute, []any{eRouting, org, "waiting", at}},
		stmt{insertDelivery, []any{idAt(at), org, eRouting, at}},
	)
	if p := partitionOf(t, s, "messages", "id", done); p != "messages_p20270310" {
		t.Fatalf("a message of 10 March is in %q", p)
	}

	// A crash once left a detached day behind.
	exec(t, s.pool, stmt{`CREATE TABLE messages_p20200101 (LIKE messages)`, nil})

	now := day.AddDate(0, 0, 31)
	r, err := s.RollDays(ctx, now, 7*24*time.Hour, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Kept: two messages, one body, one event, one route, one delivery.
	if r.Kept != 6 || r.Postponed != 0 {
		t.Fatalf("rolled %+v, want 6 rows kept", r)
	}
	var left []string
	rows, _ := s.pool.Query(ctx, `SELECT relname FROM pg_class WHERE relname LIKE '%_p20270310' OR relname = 'messages_p20200101'`)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) != 0 {
		t.Fatalf("tables of the dropped day left: %v %v", left, err)
	}
	for _, row := range []struct{ table, key, id string }{
		{"messages", "id", done}, {"message_bodies", "message_id", done}, {"message_identities", "message_id", done},
		{"events", "id", eDone}, {"routes", "event_id", eDone}, {"deliveries", "event_id", eDone},
	} {
		if p := partitionOf(t, s, row.table, row.key, row.id); p != "" && row.table != "message_identities" {
			t.Fatalf("%s still holds a row of the dropped day in %s", row.table, p)
		}
	}
	if _, err := s.Message(ctx, intake.Scope{}, done); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("the settled message: %v", err)
	}
	if _, err := s.Event(ctx, intake.Scope{}, eDone); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("the delivered event: %v", err)
	}
	for _, id := range []string{queued, routing} {
		if _, err := s.Message(ctx, intake.Scope{}, id); err != nil {
			t.Fatalf("a message in flight went with its day: %v", err)
		}
		if p := partitionOf(t, s, "messages", "id", id); p != "messages_default" {
			t.Fatalf("a message in flight is in %q", p)
		}
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, queued); err != nil {
		t.Fatalf("the queued message's body went with its day: %v", err)
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, routing); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a settled message's body outlived its day: %v", err)
	}
	if _, err := s.Event(ctx, intake.Scope{}, eRouting); err != nil {
		t.Fatalf("the event being routed: %v", err)
	}
	if routes, err := s.EventRoutes(ctx, intake.Scope{}, []string{eRouting}); err != nil || len(routes) != 1 {
		t.Fatalf("its route: %+v %v", routes, err)
	}
	pending, err := s.PendingBlobDeletes(ctx, 10)
	slices.Sort(pending)
	if err != nil || !slices.Equal(pending, []string{"k-done", "k-routing"}) {
		t.Fatalf("pending deletes %v %v, want the settled messages' objects", pending, err)
	}

	// The dropped day's keys leave in batches; the kept messages' stay.
	count := func(q string) int {
		var n int
		if err := s.pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, err := s.ForgetKeys(ctx, 1); err != nil || n != 1 {
		t.Fatalf("forgot %d keys (%v), want a batch of 1", n, err)
	}
	if n, err := s.ForgetKeys(ctx, 100); err != nil || n != 1 {
		t.Fatalf("forgot %d more keys (%v), want the other of the identity and the event key", n, err)
	}
	if n := count(`SELECT count(*) FROM message_identities`); n != 2 {
		t.Fatalf("%d identities left, want the two kept messages'", n)
	}
	if n := count(`SELECT count(*) FROM event_keys`); n != 1 {
		t.Fatalf("%d event keys left, want the kept event's", n)
	}

	// Once settled, the kept rows leave row by row.
	exec(t, s.pool,
		stmt{`UPDATE messages SET state = 'processed' WHERE id = $1`, []any{queued}},
		stmt{`UPDATE events SET state = 'delivered' WHERE id = $1`, []any{eRouting}},
		stmt{`UPDATE routes SET state = 'delivered' WHERE event_id = $1`, []any{eRouting}},
	)
	if n, err := s.DeleteSettled(ctx, now, 30*24*time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("deleted %d messages (%v), want the two kept", n, err)
	}
	for _, q := range []string{`SELECT count(*) FROM messages`, `SELECT count(*) FROM events`, `SELECT count(*) FROM routes`,
		`SELECT count(*) FROM deliveries`, `SELECT count(*) FROM message_bodies`, `SELECT count(*) FROM message_identities`,
		`SELECT count(*) FROM event_keys`} {
		if n := count(q); n != 0 {
			t.Fatalf("%s = %d after the kept rows settled and expired", q, n)
		}
	}
}

// TestADayWithRowsInTheDefaultPartitionTakesThemWhenMade: rows of a day
// that had no partition yet are in the default partition; making the day
// moves them into it.
func TestADayWithRowsInTheDefaultPartitionTakesThemWhenMade(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "acme")
	day := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	id := idAt(day.Add(time.Hour))
	exec(t, s.pool, stmt{insertMessage, []any{id, o.org.ID, day, "queued"}})
	if p := partitionOf(t, s, "messages", "id", id); p != "messages_default" {
		t.Fatalf("before its day is made, the message is in %q", p)
	}
	if _, err := s.ensureDays(ctx, day); err != nil {
		t.Fatal(err)
	}
	if p := partitionOf(t, s, "messages", "id", id); p != "messages_p20270601" {
		t.Fatalf("after, it is in %q", p)
	}
	if _, err := s.Message(ctx, intake.Scope{OrgID: o.org.ID}, id); err != nil {
		t.Fatal(err)
	}
}

// TestPartitioningKeepsEveryRowStoredBefore: a database of the version
// before day partitions (migration 24) holds a message, its body, attempt,
// event, route and delivery. Once opened and migrated, every row is there,
// in the legacy partition; the event's key still makes a re-sent event a
// duplicate; and the legacy partition leaves as a day does once all of it
// is past retention.
func TestPartitioningKeepsEveryRowStoredBefore(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	dir, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	org, msg, ev := intake.NewID(), intake.NewID(), intake.NewID()
	at := time.Now().UTC()
	exec(t, pool,
		stmt{`INSERT INTO orgs (id, name, created_at) VALUES ($1, 'old', now())`, []any{org}},
		stmt{insertMessage, []any{msg, org, at, "processed"}},
		stmt{insertBody, []any{msg, org, ""}},
		stmt{`INSERT INTO message_attempts (message_id, org_id, attempt, state, outcome, error_code, error_message, at)
			VALUES ($1, $2, 1, 'processed', 'events', '', '', now())`, []any{msg, org}},
		stmt{insertEvent, []any{ev, org, msg, at, "delivered"}},
		stmt{insertRoute, []any{ev, org, "delivered", at}},
		stmt{insertDelivery, []any{intake.NewID(), org, ev, at}},
	)
	db.Close()
	pool.Close()

	s := openURL(t, url, 4)
	for table, key := range map[string]string{"messages": "id", "message_bodies": "message_id", "message_attempts": "message_id",
		"events": "id", "routes": "event_id", "deliveries": "event_id"} {
		id := msg
		if key == "event_id" || table == "events" {
			id = ev
		}
		if p := partitionOf(t, s, table, key, id); p != table+"_legacy" {
			t.Fatalf("%s's row is in %q, want the legacy partition", table, p)
		}
	}
	var key string
	if err := s.pool.QueryRow(ctx, `SELECT provider_event_id FROM event_keys WHERE event_id = $1`, ev).Scan(&key); err != nil ||
		key != "evt_"+ev {
		t.Fatalf("the event's key: %q %v", key, err)
	}
	// Opening made the coming days, after the legacy partition's range.
	if p := partitionOf(t, s, "messages", "id", idAt(at.AddDate(0, 0, 2))); p != "" {
		t.Fatal("no such message, yet a partition answered")
	}
	parts, err := partitions(ctx, s.pool, "messages")
	if err != nil || len(parts) < 3 || parts[0].name != "messages_legacy" || !parts[len(parts)-1].dflt {
		t.Fatalf("partitions %+v %v", parts, err)
	}
	r, err := s.RollDays(ctx, at.AddDate(0, 0, 32), 7*24*time.Hour, 30*24*time.Hour)
	if err != nil || r.Dropped == 0 {
		t.Fatalf("rolled %+v %v", r, err)
	}
	if _, err := s.Message(ctx, intake.Scope{}, msg); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("the legacy message outlived retention: %v", err)
	}
}

// TestTheSweeperDropsDaysAndForgetsTheirKeys: the sweeper, given this
// store, drops a day past retention whole and forgets its keys, through
// intake.DayRetention.
func TestTheSweeperDropsDaysAndForgetsTheirKeys(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	org := newOrg(t, s, "acme").org.ID
	day := time.Date(2027, 4, 2, 0, 0, 0, 0, time.UTC)
	if _, err := s.ensureDays(ctx, day); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		at := day.Add(time.Duration(i) * time.Hour)
		m, e := idAt(at), idAt(at.Add(time.Second))
		exec(t, s.pool,
			stmt{insertMessage, []any{m, org, at, "processed"}},
			stmt{insertBody, []any{m, org, ""}},
			stmt{insertIdentity, []any{m, org}},
			stmt{insertEvent, []any{e, org, m, at, "delivered"}},
			stmt{insertEventKey, []any{e, org}},
		)
	}
	sw := sweeper.New(sweeper.Config{Store: s, Clock: fixedClock(day.AddDate(0, 0, 31)), Batch: 2, KeysPerSecond: 1e6})
	if _, _, err := sw.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT count(*) FROM messages`, `SELECT count(*) FROM message_bodies`, `SELECT count(*) FROM events`,
		`SELECT count(*) FROM message_identities`, `SELECT count(*) FROM event_keys`,
		`SELECT count(*) FROM pg_class WHERE relname LIKE '%_p20270402'`} {
		var n int
		if err := s.pool.QueryRow(ctx, q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s = %d (%v) after the sweep", q, n, err)
		}
	}
}

// TestADayWhoseTableIsBusyIsDroppedAtTheNextSweep: a transaction holding
// messages longer than a drop waits (a long read) makes the drop, and the
// making of its coming days, give up within the lock timeout, leaving the
// day whole; once it ends, the next roll drops the day.
func TestADayWhoseTableIsBusyIsDroppedAtTheNextSweep(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: pgtest.Database(t), MaxConns: 4, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	org := newOrg(t, s, "acme").org.ID
	day := time.Date(2027, 5, 3, 0, 0, 0, 0, time.UTC)
	if _, err := s.ensureDays(ctx, day); err != nil {
		t.Fatal(err)
	}
	id := idAt(day.Add(time.Hour))
	exec(t, s.pool, stmt{insertMessage, []any{id, org, day, "processed"}})

	long, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { long.Rollback(ctx) })
	var n int
	if err := long.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	now := day.AddDate(0, 0, 31)
	r, err := s.RollDays(ctx, now, 7*24*time.Hour, 30*24*time.Hour)
	// The messages' day is not dropped, nor are its coming days made (the
	// read holds its default partition too), each tried once; the other
	// tables' are.
	if err != nil || r.Postponed != 2 || r.Dropped == 0 {
		t.Fatalf("rolled %+v %v, want the messages' day and coming days postponed", r, err)
	}
	if p := partitionOf(t, s, "messages", "id", id); p != "messages_p20270503" {
		t.Fatalf("the postponed day's message is in %q", p)
	}
	if err := long.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := s.RollDays(ctx, now, 7*24*time.Hour, 30*24*time.Hour); err != nil || r.Postponed != 0 || r.Dropped == 0 {
		t.Fatalf("rolled %+v %v after the read ended", r, err)
	}
	if p := partitionOf(t, s, "messages", "id", id); p != "" {
		t.Fatalf("the day's message is still in %q", p)
	}
}

package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// TestRetentionResumesPastWhatItDeletedUntilAPassEnds: each walk of
// retention goes on from the last row its previous batch deleted, so a row
// it skipped (in flight) that settles meanwhile waits for the next pass;
// a batch short of its limit ends the pass, and the next finds that row.
// A walk that started from the oldest at every batch would take it at once.
func TestRetentionResumesPastWhatItDeletedUntilAPassEnds(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	o := newOrg(t, s, "a")
	// Six messages a second apart; the oldest is still queued.
	var ids []string
	for i := range 6 {
		m := o.message(fmt.Sprintf(`{"n":%d}`, i))
		m.ReceivedAt = t0.Add(time.Duration(i) * time.Second)
		if err := s.Ingest(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	// The bodies searchable already: the search indexer, locking one,
	// would make a batch skip it.
	if _, err := s.pool.Exec(ctx, `UPDATE message_bodies SET searchable = true WHERE message_id = ANY($1::uuid[])`, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET state = 'processed' WHERE id = ANY($1::uuid[])`, ids[1:]); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	setState := func(state intake.MessageState) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, `UPDATE messages SET state = $2 WHERE id = $1`, ids[0], string(state)); err != nil {
			t.Fatal(err)
		}
	}
	for _, walk := range []struct {
		table, key string
		batch      func(limit int) (int, error)
	}{
		{"message_bodies", "message_id", func(limit int) (int, error) { return s.DropBodies(ctx, later, time.Minute, limit) }},
		{"messages", "id", func(limit int) (int, error) { return s.DeleteSettled(ctx, later, time.Minute, limit) }},
	} {
		// gone lists which of the six the table no longer holds.
		gone := func() []int {
			t.Helper()
			rows, _ := s.pool.Query(ctx, `SELECT `+walk.key+`::text FROM `+walk.table+` WHERE `+walk.key+` = ANY($1::uuid[])`, ids)
			left, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			var out []int
			for i, id := range ids {
				if !slices.Contains(left, id) {
					out = append(out, i)
				}
			}
			return out
		}
		setState(intake.MessageQueued)
		for i, step := range []struct {
			settle bool // the oldest settles before the batch
			n      int
			gone   []int
		}{
			{n: 2, gone: []int{1, 2}},
			{settle: true, n: 2, gone: []int{1, 2, 3, 4}}, // on from the last it deleted
			{n: 1, gone: []int{1, 2, 3, 4, 5}},            // short of its limit: the pass ends
			{n: 1, gone: []int{0, 1, 2, 3, 4, 5}},         // the next pass starts from the oldest
		} {
			if step.settle {
				setState(intake.MessageProcessed)
			}
			n, err := walk.batch(2)
			if err != nil || n != step.n || !slices.Equal(gone(), step.gone) {
				t.Fatalf("%s, batch %d: deleted %d (%v), gone %v; want %d, gone %v", walk.table, i+1, n, err, gone(), step.n, step.gone)
			}
		}
	}
}

// TestBodiesStoredBeforeTheirIndexTakeTheirMessagesTime: a body stored at
// migration 24 takes its message's received_at (migration 25), so the
// sweeper's walk over bodies finds it when it expires, not before; the
// migration takes them in batches.
func TestBodiesStoredBeforeTheirIndexTakeTheirMessagesTime(t *testing.T) {
	ctx := context.Background()
	org := intake.NewID()
	msgs := []string{intake.NewID(), intake.NewID()}
	rows := []row{{`INSERT INTO orgs (id, name, created_at) VALUES ($1, 'old', now())`, []any{org}}}
	for i, id := range msgs {
		rows = append(rows,
			row{`INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
			  VALUES ($1, $2, $2, $2, 'POST', '', 'd', $3, 'processed', 1, 6)`, []any{id, org, t0.Add(time.Duration(i) * time.Hour)}},
			// Searchable already: the indexer, locking the row, would make
			// the sweep skip it.
			row{`INSERT INTO message_bodies (message_id, org_id, header, body, searchable) VALUES ($1, $2, '{}', '\x7b7d', true)`, []any{id, org}})
	}
	// And enough more that the migration takes them in several batches.
	rows = append(rows,
		row{`INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
		  SELECT gen_random_uuid(), $1, $1, $1, 'POST', '', 'd', $2::timestamptz + make_interval(days => 1), 'processed', 1, 6
		    FROM generate_series(1, 25000)`, []any{org, t0}},
		row{`INSERT INTO message_bodies (message_id, org_id, header, body, searchable)
		  SELECT id, org_id, '{}', '\x7b7d', true FROM messages WHERE received_at > $1`, []any{t0.Add(time.Hour)}})
	s := openFromMigration(t, 24, rows...)
	if n := s.scalar(t, `SELECT count(*) FROM message_bodies WHERE received_at IS DISTINCT FROM $1::timestamptz + make_interval(days => 1)`, t0); n != "2" {
		t.Fatalf("%s bodies without their message's time, want the 2 received on the day before", n)
	}
	for i, id := range msgs {
		var at time.Time
		if err := s.pool.QueryRow(ctx, `SELECT received_at FROM message_bodies WHERE message_id = $1`, id).Scan(&at); err != nil ||
			!at.Equal(t0.Add(time.Duration(i)*time.Hour)) {
			t.Fatalf("body %d received at %s (%v)", i, at, err)
		}
	}
	if n, err := s.DropBodies(ctx, t0.Add(90*time.Minute), time.Hour, 10); err != nil || n != 1 {
		t.Fatalf("dropped %d bodies (%v), want the one received two hours before", n, err)
	}
	if _, err := s.MessageBody(ctx, intake.Scope{}, msgs[1]); err != nil {
		t.Fatalf("the younger body: %v", err)
	}
}

// TestEachRetentionWalkResumesFromItsOwnLastRow: the bodies' walk and the
// rows' walk each resume from the last row they deleted themselves, so
// neither skips what only the other has passed. The oldest message has an
// event still pending: its body may go, its row may not, and the walks part.
func TestEachRetentionWalkResumesFromItsOwnLastRow(t *testing.T) {
	ctx := context.Background()
	later := t0.Add(time.Hour)
	type batch struct {
		table string // message_bodies or messages
		limit int
		gone  []int // which of the six the table no longer holds after it
	}
	for _, tc := range []struct {
		name    string
		batches []batch
	}{
		{"bodies first", []batch{
			{"message_bodies", 3, []int{0, 1, 2}},
			{"messages", 2, []int{1, 2}}, // from the oldest, not from where the bodies' walk stopped
		}},
		{"rows first", []batch{
			{"messages", 2, []int{1, 2}},
			{"message_bodies", 2, []int{0, 1, 2, 3}}, // from the oldest, not from where the rows' walk stopped
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			o := newOrg(t, s, "a")
			first, _ := o.processed(t, s, `{"n":0}`)
			ids := []string{first.ID}
			for i := 1; i < 6; i++ {
				m := o.message(fmt.Sprintf(`{"n":%d}`, i))
				m.ReceivedAt = t0.Add(time.Duration(i) * time.Second)
				if err := s.Ingest(ctx, m); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m.ID)
			}
			// The bodies searchable already: the search indexer, locking one,
			// would make a batch skip it.
			if _, err := s.pool.Exec(ctx, `UPDATE message_bodies SET searchable = true WHERE message_id = ANY($1::uuid[])`, ids); err != nil {
				t.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, `UPDATE messages SET state = 'processed' WHERE id = ANY($1::uuid[])`, ids[1:]); err != nil {
				t.Fatal(err)
			}
			for i, b := range tc.batches {
				var n int
				var err error
				key := "message_id"
				if b.table == "messages" {
					key = "id"
					n, err = s.DeleteSettled(ctx, later, time.Minute, b.limit)
				} else {
					n, err = s.DropBodies(ctx, later, time.Minute, b.limit)
				}
				rows, _ := s.pool.Query(ctx, `SELECT `+key+`::text FROM `+b.table+` WHERE `+key+` = ANY($1::uuid[])`, ids)
				left, qerr := pgx.CollectRows(rows, pgx.RowTo[string])
				if qerr != nil {
					t.Fatal(qerr)
				}
				var gone []int
				for j, id := range ids {
					if !slices.Contains(left, id) {
						gone = append(gone, j)
					}
				}
				if err != nil || n != b.limit || !slices.Equal(gone, b.gone) {
					t.Fatalf("batch %d of %s: deleted %d (%v), gone %v; want %d, gone %v", i+1, b.table, n, err, gone, b.limit, b.gone)
				}
			}
		})
	}
}

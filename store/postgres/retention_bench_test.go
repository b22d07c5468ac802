package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/sweeper"
)

// BenchmarkRetentionAckP99 measures the ack path while retention removes a
// day of INTAKE_BENCH_RETENTION messages (10 000 000 when set to 1), with
// a body, an event, an identity and an event key each: the p99 of Ingest,
// the commit an ack waits for, under a steady 200 webhooks a second (17
// million a day). Dropping the day's partitions takes seconds; forgetting
// its 20 million keys at the sweeper's pace takes hours, so that is what
// an ack lives beside while retention removes a day. Phases of 30 seconds
// alternate with phases without retention: first the sweep that drops the
// day (and forgets no key), then, twice over, the sweeper forgetting keys
// at 500 a second (its default) and at 1 000. Each kind's latencies are
// pooled. Seeding takes a while, so it runs only when asked:
//
//	INTAKE_BENCH_RETENTION=1 go test -run='^$' -bench=BenchmarkRetentionAckP99 -benchtime=1x -timeout=3h ./store/postgres/
func BenchmarkRetentionAckP99(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("INTAKE_BENCH_RETENTION"))
	switch {
	case n == 0:
		b.Skip("set INTAKE_BENCH_RETENTION=1 (or a number of messages) to seed and measure a day's drop")
	case n == 1:
		n = 10_000_000
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: pgtest.Database(b), MaxConns: 16, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	o := newOrg(b, s, "bench")
	now := time.Now().UTC()
	day := now.AddDate(0, 0, -31).Truncate(24 * time.Hour)
	seedDay(b, s, o.org.ID, day, n)

	// load posts for as long as phase runs, and returns the latencies.
	load := func(name string, phase func()) []time.Duration {
		const rate, callers = 200, 8
		pad := strings.Repeat("x", 2000)
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for c := range callers {
			wg.Go(func() {
				tick := time.NewTicker(time.Second * callers / rate)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					m := o.message(fmt.Sprintf(`{"c":%d,"i":%d,"pad":%q}`, c, i, pad))
					start := time.Now()
					if err := s.Ingest(ctx, m); err != nil {
						b.Error(err)
						return
					}
					d := time.Since(start)
					if d > 100*time.Millisecond {
						fmt.Fprintf(os.Stderr, "%s: a slow ack at %s took %s\n", name, start.Format(time.TimeOnly+".000"), d)
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
		}
		phase()
		close(stop)
		wg.Wait()
		return lat
	}
	const phase = 30 * time.Second
	idle := func() { time.Sleep(phase) }
	sweep := func(keysPerSecond float64) func() {
		sw := sweeper.New(sweeper.Config{Store: s, Clock: fixedClock(now), Interval: phase, KeysPerSecond: keysPerSecond,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		return func() {
			end := time.Now().Add(phase)
			if _, _, err := sw.RunOnce(ctx); err != nil {
				b.Error(err)
			}
			time.Sleep(time.Until(end))
		}
	}
	const without, drop, keys500, keys1000 = "without retention", "dropping the day", "keys at 500/s", "keys at 1000/s"
	kinds := []struct {
		name  string
		phase func()
	}{
		{without, idle}, {drop, sweep(1e-9)},
		{without, idle}, {keys500, sweep(500)}, {without, idle}, {keys1000, sweep(1000)},
		{without, idle}, {keys500, sweep(500)}, {without, idle}, {keys1000, sweep(1000)},
	}
	pooled := map[string][]time.Duration{}
	b.ResetTimer()
	for _, k := range kinds {
		pooled[k.name] = append(pooled[k.name], load(k.name, k.phase)...)
	}
	b.StopTimer()

	p99 := map[string]float64{}
	for name, lat := range pooled {
		slices.Sort(lat)
		b.Logf("%s: %d acks, p50 %s, p99 %s, max %s", name, len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
		p99[name] = float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
	}
	var left, keys int
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE id < $1`, dayID(day.AddDate(0, 0, 1))).Scan(&left)
	_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM message_identities WHERE message_id < $1`, dayID(day.AddDate(0, 0, 1))).Scan(&keys)
	b.Logf("%d messages of the day left (kept in flight), %d of its %d identities left to forget", left, keys, n)
	if left > n/10000 {
		b.Fatalf("%d of the day's %d messages are left", left, n)
	}
	b.ReportMetric(p99[without], "p99-without-ms")
	for _, k := range []struct{ name, unit string }{{drop, "drop"}, {keys500, "keys500"}, {keys1000, "keys1000"}} {
		b.ReportMetric(p99[k.name], "p99-"+k.unit+"-ms")
		b.ReportMetric(p99[k.name]/p99[without], k.unit+"/without")
	}
}

// seedDay lays down n messages of org received over day, with a body, an
// event, an identity and an event key each; one in ten thousand still
// queued. Each day partition is filled while it stands alone and attached
// after, so its indexes are built once rather than row by row.
func seedDay(b *testing.B, s *Store, org string, day time.Time, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	lo, hi := dayID(day), dayID(day.AddDate(0, 0, 1))
	// Free the day of the legacy partition a new database starts with.
	for _, t := range dayTables {
		for _, q := range []string{
			`ALTER TABLE ` + t.name + ` DETACH PARTITION ` + t.name + `_legacy`,
			`DROP TABLE ` + t.name + `_legacy`,
		} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := s.ensureDays(ctx, time.Now()); err != nil {
		b.Fatal(err)
	}
	// v7 is the i-th UUIDv7 of the day, of series seed.
	v7 := func(seed string) string {
		return `(lpad(to_hex(($1::bigint + (i - 1) * 86400000::bigint / $2)), 12, '0') || '7' || substr(md5('` + seed + `' || i), 1, 19))::uuid`
	}
	ms := day.UnixMilli()
	suffix := "_p" + day.Format("20060102")
	for _, fill := range []struct{ table, key, insert string }{
		{"messages", "id", `INSERT INTO messages` + suffix + ` (id, org_id, connection_id, endpoint_id, method, query, digest,
			received_at, state, attempt, max_attempts, next_attempt_at)
			SELECT ` + v7("m") + `, $3, $3, $3, 'POST', '', 'd', to_timestamp(($1::bigint + (i - 1) * 86400000::bigint / $2) / 1000.0),
			       CASE WHEN i % 10000 = 0 THEN 'queued' ELSE 'processed' END, 1, 6, NULL
			  FROM generate_series(1, $2) i`},
		{"message_bodies", "message_id", `INSERT INTO message_bodies` + suffix + ` (message_id, org_id, header, body, searchable)
			SELECT ` + v7("m") + `, $3, '{}', convert_to(repeat('x', 200), 'UTF8'), true FROM generate_series(1, $2) i`},
		{"events", "id", `INSERT INTO events` + suffix + ` (id, org_id, connection_id, message_id, provider, type, kind,
			provider_event_id, occurred_at, received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
			SELECT ` + v7("e") + `, $3, $3, ` + v7("m") + `, 'stripe', 't', 'event', 'evt_' || i, now(), now(), '{"n":1}', false,
			       '{}', 'delivered', 1, 6, false, now()
			  FROM generate_series(1, $2) i`},
	} {
		t0 := time.Now()
		for _, q := range []string{
			`CREATE TABLE ` + fill.table + suffix + ` (LIKE ` + fill.table + ` INCLUDING DEFAULTS)`,
			fill.insert,
			`ALTER TABLE ` + fill.table + ` ATTACH PARTITION ` + fill.table + suffix + ` FOR VALUES FROM ('` + lo + `') TO ('` + hi + `')`,
		} {
			args := []any{ms, n, org}
			if !strings.Contains(q, "$1") {
				args = nil
			}
			if _, err := s.pool.Exec(ctx, q, args...); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
		}
		b.Logf("seeded %d rows of %s in %s", n, fill.table, time.Since(t0).Round(time.Second))
	}
	for _, q := range []string{
		`INSERT INTO message_identities (connection_id, key, org_id, digest, event_type, message_id)
			SELECT $3, 'k' || i, $3, 'd', 't', ` + v7("m") + ` FROM generate_series(1, $2) i`,
		`INSERT INTO event_keys (connection_id, provider_event_id, event_id, org_id)
			SELECT $3, 'evt_' || i, ` + v7("e") + `, $3 FROM generate_series(1, $2) i`,
	} {
		if _, err := s.pool.Exec(ctx, q, ms, n, org); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	// Settled as a day's writes would be by now: vacuumed, analyzed and
	// checkpointed, so the measurement does not pay for the seeding.
	for _, q := range []string{`VACUUM ANALYZE`, `CHECKPOINT`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded the day of %d messages in %s", n, time.Since(start).Round(time.Second))
}

// fixedClock is a clock stopped at one time.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

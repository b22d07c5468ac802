package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"

	"github.com/intakehq/intake/internal/testkit/clock"
	"github.com/intakehq/intake/store/postgres/pgtest"
	"github.com/intakehq/intake/sweeper"
)

// BenchmarkRetentionAckP99 measures the ack path while retention removes a
// day of INTAKE_BENCH_RETENTION messages (10 000 000 when set to 1), each
// with a body, an event, an identity, a route and a delivery: the p99 of
// Ingest, the commit an ack waits for, under a steady 200 webhooks a
// second (17 million a day). Phases of 30 seconds alternate with phases
// without retention: the sweeper dropping the day's bodies, then deleting
// its messages (with all that hangs off them), at its default pace of 1 000
// a second, and deleting messages with no pace at all. Each kind's
// latencies are pooled. Seeding takes a while, so it runs only when asked:
//
//	INTAKE_BENCH_RETENTION=1 go test -run='^$' -bench=BenchmarkRetentionAckP99 -benchtime=1x -timeout=3h ./store/postgres/
func BenchmarkRetentionAckP99(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("INTAKE_BENCH_RETENTION"))
	switch {
	case n == 0:
		b.Skip("set INTAKE_BENCH_RETENTION=1 (or a number of messages) to seed a day and measure its removal")
	case n == 1:
		n = 10_000_000
	}
	ctx := context.Background()
	s := openURL(b, pgtest.Database(b), 16)
	o := newOrg(b, s, "bench")
	now := time.Now().UTC()
	day := now.AddDate(0, 0, -31).Truncate(24 * time.Hour)
	seedDay(b, s, o.org.ID, day, n)

	// load posts for as long as phase runs, and returns the latencies.
	load := func(phase func()) []time.Duration {
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
					m.ReceivedAt, m.NextAttemptAt = time.Now(), time.Now()
					start := time.Now()
					if err := s.Ingest(ctx, m); err != nil {
						b.Error(err)
						return
					}
					d := time.Since(start)
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
	phase := 30 * time.Second
	if n < 1_000_000 {
		phase = 3 * time.Second // a trial of the benchmark itself
	}
	deleted := map[string]int{}
	idle := func(string) func() { return func() { time.Sleep(phase) } }
	// sweep runs the sweeper for a phase: bodies past 7 days, or (with
	// bodies kept) messages past 30, at pace.
	sweep := func(bodies bool, pace rate.Limit) func(string) func() {
		body := 1000 * 24 * time.Hour
		if bodies {
			body = 7 * 24 * time.Hour
		}
		sw := sweeper.New(sweeper.Config{Store: s, Clock: clock.New(now), BodyRetention: body, PerSecond: pace})
		return func(kind string) func() {
			return func() {
				// Cancelled, not a deadline: the pace's wait runs up to the end.
				pctx, cancel := context.WithCancel(ctx)
				defer time.AfterFunc(phase, cancel).Stop()
				nb, nm, err := sw.RunOnce(pctx)
				if err != nil && pctx.Err() == nil {
					b.Error(err)
				}
				deleted[kind] += nb + nm
				<-pctx.Done()
			}
		}
	}
	const without, bodies, messages, unpaced = "without retention", "bodies at 1000/s", "messages at 1000/s", "messages unpaced"
	kinds := []struct {
		name  string
		phase func(string) func()
	}{
		{without, idle}, {bodies, sweep(true, 1000)}, {without, idle}, {messages, sweep(false, 1000)},
		{without, idle}, {unpaced, sweep(false, rate.Inf)},
		{without, idle}, {bodies, sweep(true, 1000)}, {without, idle}, {messages, sweep(false, 1000)},
		{without, idle}, {unpaced, sweep(false, rate.Inf)},
	}
	pooled := map[string][]time.Duration{}
	phases := map[string]int{}
	b.ResetTimer()
	for _, k := range kinds {
		pooled[k.name] = append(pooled[k.name], load(k.phase(k.name))...)
		phases[k.name]++
	}
	b.StopTimer()

	p99 := map[string]float64{}
	for name, lat := range pooled {
		slices.Sort(lat)
		// To stderr: a benchmark's log keeps only its first lines.
		fmt.Fprintf(os.Stderr, "%s: %d acks, p50 %s, p99 %s, max %s; %.0f rows a second deleted\n", name, len(lat), lat[len(lat)/2],
			lat[len(lat)*99/100], lat[len(lat)-1], float64(deleted[name])/(float64(phases[name])*phase.Seconds()))
		p99[name] = float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
	}
	for _, k := range []string{bodies, messages, unpaced} {
		if deleted[k] == 0 {
			b.Fatalf("%s: nothing deleted", k)
		}
	}
	b.ReportMetric(p99[without], "p99-without-ms")
	for _, k := range []struct{ name, unit string }{{bodies, "bodies"}, {messages, "messages"}, {unpaced, "unpaced"}} {
		b.ReportMetric(p99[k.name], "p99-"+k.unit+"-ms")
		b.ReportMetric(p99[k.name]/p99[without], k.unit+"/without")
		b.ReportMetric(float64(deleted[k.name])/(float64(phases[k.name])*phase.Seconds()), k.unit+"-deleted/s")
	}
}

// seedDay lays down n settled messages of org received over day, with a
// body, an event, an identity, a route and a delivery each. The tables'
// secondary indexes are dropped while they fill and built once after, and
// foreign keys are not checked, or seeding would take hours.
func seedDay(b *testing.B, s *Store, org string, day time.Time, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	exec := func(q string, args ...any) {
		b.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	tables := []string{"messages", "message_bodies", "events", "message_identities", "routes", "deliveries"}
	rows, err := conn.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		 WHERE i.schemaname = current_schema() AND i.tablename = ANY($1)
		   AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)`, tables)
	if err != nil {
		b.Fatal(err)
	}
	type index struct{ Name, Def string }
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	if err != nil {
		b.Fatal(err)
	}
	for _, ix := range indexes {
		exec(`DROP INDEX ` + pgx.Identifier{ix.Name}.Sanitize())
	}
	exec(`SET session_replication_role = replica`)
	// v7 is the i-th UUIDv7 of the day, of series seed; at the time of it.
	v7 := func(seed string) string {
		return `(lpad(to_hex(($1::bigint + (i - 1) * 86400000::bigint / $2)), 12, '0') || '7' || substr(md5('` + seed + `' || i), 1, 19))::uuid`
	}
	const at = `to_timestamp(($1::bigint + (i - 1) * 86400000::bigint / $2) / 1000.0)`
	for _, q := range []struct{ table, insert string }{
		{"messages", `INSERT INTO messages (id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts)
			SELECT ` + v7("m") + `, $3, $3, $3, 'POST', '', 'd', ` + at + `, 'processed', 1, 6 FROM generate_series(1, $2) i`},
		{"message_bodies", `INSERT INTO message_bodies (message_id, org_id, header, body, searchable, received_at)
			SELECT ` + v7("m") + `, $3, '{}', convert_to(repeat('x', 200), 'UTF8'), true, ` + at + ` FROM generate_series(1, $2) i`},
		{"events", `INSERT INTO events (id, org_id, connection_id, message_id, provider, type, kind,
			provider_event_id, occurred_at, received_at, data, data_truncated, object_ids, state, attempt, max_attempts, replay, created_at)
			SELECT ` + v7("e") + `, $3, $3, ` + v7("m") + `, 'stripe', 't', 'event', 'evt_' || i, ` + at + `, ` + at + `, '{"n":1}', false,
			       '{}', 'delivered', 1, 6, false, ` + at + ` FROM generate_series(1, $2) i`},
		{"message_identities", `INSERT INTO message_identities (connection_id, key, org_id, digest, event_type, message_id)
			SELECT $3, 'k' || i, $3, 'd', 't', ` + v7("m") + ` FROM generate_series(1, $2) i`},
		{"routes", `INSERT INTO routes (event_id, consumer_id, org_id, state, attempt, next_at, order_at)
			SELECT ` + v7("e") + `, $3, $3, 'handled', 1, ` + at + `, ` + at + ` FROM generate_series(1, $2) i`},
		{"deliveries", `INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at)
			SELECT ` + v7("d") + `, $3, ` + v7("e") + `, $3, 1, 'handled', 200, 1000, '', ` + at + ` FROM generate_series(1, $2) i`},
	} {
		t0 := time.Now()
		exec(q.insert, day.UnixMilli(), n, org)
		b.Logf("seeded %d rows of %s in %s", n, q.table, time.Since(t0).Round(time.Second))
	}
	exec(`SET session_replication_role = DEFAULT`)
	exec(`SET maintenance_work_mem = '1GB'`)
	t0 := time.Now()
	for _, ix := range indexes {
		exec(ix.Def)
	}
	b.Logf("built %d indexes in %s", len(indexes), time.Since(t0).Round(time.Second))
	// Settled as a day's writes would be by now: vacuumed, analyzed and
	// checkpointed, so the measurement does not pay for the seeding.
	exec(`VACUUM ANALYZE`)
	exec(`CHECKPOINT`)
	var size string
	_ = conn.QueryRow(ctx, `SELECT pg_size_pretty(pg_database_size(current_database()))`).Scan(&size)
	b.Logf("seeded the day of %d messages in %s: %s on disk", n, time.Since(start).Round(time.Second), size)
}

package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// The states Stats always counts exactly, each from a partial index that
// holds only the rows in them.
const (
	exactMessageStates = `'queued', 'processing', 'failed', 'dead'`
	exactEventStates   = `'pending', 'retrying', 'dead', 'no_consumer'`
)

// exactBelow is the default table size (PostgreSQL's estimate) under which
// Stats counts every state exactly: a scan of that many rows is cheap.
const exactBelow = 100_000

// Stats counts without scanning the tables, so a metrics scrape stays
// cheap at millions of rows and adds no row that every ingest would update.
// The states that need an operator (messages queued, processing, failed and
// dead; events pending, retrying, dead and no_consumer) are counted exactly
// from partial indexes that hold only them. The many settled rows (messages
// processed and ignored; events delivered) are, once a table holds
// exactBelow rows or more, estimated: the table's size from
// PostgreSQL's statistics, split between those states by the frequencies
// ANALYZE sampled. Autovacuum keeps those statistics within about a tenth
// of the table's changes; until it has first analyzed a table, that table
// is counted.
func (s *Store) Stats(ctx context.Context, now time.Time) (intake.Stats, error) {
	st := intake.Stats{Messages: map[intake.MessageState]int{}, Events: map[[2]string]int{}}
	var messageRows, eventRows float64
	var stateVals []string
	var stateFreqs, pairFreqs []float64
	var pairVals [][]string
	var m, e *time.Time
	b := &pgx.Batch{}
	b.Queue(`SELECT state, count(*) FROM messages WHERE state IN ('queued', 'processing', 'failed') GROUP BY state`).
		Query(func(rows pgx.Rows) error { return collectStates(rows, st.Messages) })
	b.Queue(`SELECT 'dead', count(*) FROM messages WHERE state = 'dead'`).
		Query(func(rows pgx.Rows) error { return collectStates(rows, st.Messages) })
	b.Queue(`SELECT provider, state, count(*) FROM events WHERE state IN (` + exactEventStates + `) GROUP BY provider, state`).
		Query(func(rows pgx.Rows) error { return collectPairs(rows, st.Events) })
	// The planner's own estimate of a table's rows now: the density the
	// last VACUUM or ANALYZE saw times the pages the table has; -1 when
	// neither has run yet.
	b.Queue(`SELECT coalesce(max(est) FILTER (WHERE relname = 'messages'), -1), coalesce(max(est) FILTER (WHERE relname = 'events'), -1)
		FROM (SELECT relname, CASE WHEN reltuples < 0 OR (relpages = 0 AND reltuples > 0) THEN -1
		                           WHEN relpages = 0 THEN 0
		                           ELSE reltuples / relpages * (pg_relation_size(oid) / current_setting('block_size')::int) END AS est
		        FROM pg_class WHERE oid IN ('messages'::regclass, 'events'::regclass)) t`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&messageRows, &eventRows) })
	b.Queue(`SELECT coalesce(most_common_vals::text::text[], '{}'), coalesce(most_common_freqs, '{}') FROM pg_stats
		WHERE schemaname = current_schema() AND tablename = 'messages' AND attname = 'state'
		UNION ALL SELECT '{}', '{}' LIMIT 1`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&stateVals, &stateFreqs) })
	b.Queue(`SELECT coalesce(most_common_vals, '{}'), coalesce(most_common_freqs, '{}') FROM pg_stats_ext
		WHERE schemaname = current_schema() AND statistics_name = 'events_provider_state'
		UNION ALL SELECT '{}', '{}' LIMIT 1`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&pairVals, &pairFreqs) })
	b.Queue(`SELECT min(next_attempt_at) FROM messages WHERE state IN (`+claimable+`) AND next_attempt_at <= coalesce($1::timestamptz, statement_timestamp())`, s.clockNow(now)).
		QueryRow(func(row pgx.Row) error { return row.Scan(&m) })
	// Due events still to fan out, and due routes of consumers not paused.
	b.Queue(`SELECT least((SELECT min(next_attempt_at) FROM events WHERE state IN ('pending', 'retrying') AND next_attempt_at <= coalesce($2::timestamptz, statement_timestamp())),
		`+oldestDueRoute+`)`, nil, s.clockNow(now)).
		QueryRow(func(row pgx.Row) error { return row.Scan(&e) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return st, classify(err)
	}
	st.OldestDueMessage, st.OldestDueEvent = fromTS(m), fromTS(e)

	exact := &pgx.Batch{}
	if messageRows < float64(s.exactBelow) || len(stateVals) == 0 {
		exact.Queue(`SELECT state, count(*) FROM messages WHERE state NOT IN (` + exactMessageStates + `) GROUP BY state`).
			Query(func(rows pgx.Rows) error { return collectStates(rows, st.Messages) })
	} else {
		estimateStates(st.Messages, messageRows, stateVals, stateFreqs)
	}
	if eventRows < float64(s.exactBelow) || len(pairVals) == 0 {
		exact.Queue(`SELECT provider, state, count(*) FROM events WHERE state NOT IN (` + exactEventStates + `) GROUP BY provider, state`).
			Query(func(rows pgx.Rows) error { return collectPairs(rows, st.Events) })
	} else {
		estimatePairs(st.Events, eventRows, pairVals, pairFreqs)
	}
	if exact.Len() > 0 {
		if err := s.pool.SendBatch(ctx, exact).Close(); err != nil {
			return st, classify(err)
		}
	}
	return st, nil
}

func collectStates(rows pgx.Rows, into map[intake.MessageState]int) error {
	var state intake.MessageState
	var n int
	_, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { into[state] = n; return nil })
	return err
}

func collectPairs(rows pgx.Rows, into map[[2]string]int) error {
	var provider, state string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&provider, &state, &n}, func() error { into[[2]string{provider, state}] = n; return nil })
	return err
}

// estimateStates splits the rows the exact counts leave between the other
// states by their sampled frequencies.
func estimateStates(into map[intake.MessageState]int, rows float64, vals []string, freqs []float64) {
	rest := rows
	for _, n := range into {
		rest -= float64(n)
	}
	var sum float64
	share := map[intake.MessageState]float64{}
	for i, v := range vals {
		if st := intake.MessageState(v); !strings.Contains(exactMessageStates, "'"+v+"'") && i < len(freqs) {
			share[st] = freqs[i]
			sum += freqs[i]
		}
	}
	if sum == 0 || rest <= 0 {
		return
	}
	for st, f := range share {
		into[st] = int(rest*f/sum + 0.5)
	}
}

// estimatePairs does the same for events, per provider, by the sampled
// frequencies of (provider, state) pairs.
func estimatePairs(into map[[2]string]int, rows float64, vals [][]string, freqs []float64) {
	rest := rows
	for _, n := range into {
		rest -= float64(n)
	}
	var sum float64
	share := map[[2]string]float64{}
	for i, v := range vals {
		if len(v) == 2 && !strings.Contains(exactEventStates, "'"+v[1]+"'") && i < len(freqs) {
			share[[2]string{v[0], v[1]}] = freqs[i]
			sum += freqs[i]
		}
	}
	if sum == 0 || rest <= 0 {
		return
	}
	for k, f := range share {
		into[k] = int(rest*f/sum + 0.5)
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

// Settles are read → decide → write (DESIGN §7). The settles that reach
// the writer for one group commit are settled together: one read per kind
// of row for all of them, intake's decision, and one statement per kind of
// row to write it. Rows travel to SQLite as one JSON array per statement
// (json_each), so each statement has one shape whatever the batch holds,
// and is prepared once; but events, whose data is most of what a settle
// writes, are bound as parameters (insertEvents).

// messageSettle is a processing result waiting for the writer, and what
// it settled.
type messageSettle struct {
	in  intake.TimedSettlement
	out intake.Settled
}

// SettleMessage applies a processing result in the next group commit,
// with the other results that reach the writer for it.
func (s *Store) SettleMessage(ctx context.Context, now time.Time, st intake.Settlement) (intake.Settled, error) {
	m := &messageSettle{in: intake.TimedSettlement{Now: now, Settlement: st}}
	if err := s.submit(writeJob{ctx: ctx, settle: m}); err != nil {
		return intake.Settled{}, err
	}
	return m.out, nil
}

// routeSettle is a call's result waiting for the writer.
type routeSettle struct {
	in intake.TimedRouteSettlement
	// recorded is the call's delivery outcome as the decision wrote it.
	recorded string
}

// SettleRoute applies one call's result in the next group commit, with
// the other results that reach the writer for it.
func (s *Store) SettleRoute(ctx context.Context, now time.Time, st intake.RouteSettlement, b intake.Backoff) (string, error) {
	call := &routeSettle{in: intake.TimedRouteSettlement{Now: now, Backoff: b, RouteSettlement: st}}
	if err := s.submit(writeJob{ctx: ctx, call: call}); err != nil {
		return "", err
	}
	return call.recorded, nil
}

// runSettles settles the batch's processing results and call results,
// each kind together in a savepoint; if that fails, each result alone in
// its own, so that none fails its neighbours. It returns what to do once
// the commit holding them returned.
func (s *Store) runSettles(tx *wtx, batch []writeJob, results []error) (after func()) {
	var msgs, calls []int
	for i, j := range batch {
		switch {
		case j.settle != nil:
			msgs = append(msgs, i)
		case j.call != nil:
			calls = append(calls, i)
		}
	}
	var wakeEvents, wakeRoutes bool
	run := func(idx []int, fn func(tx *wtx, jobs []writeJob) ([]error, error)) {
		if len(idx) == 0 {
			return
		}
		jobs := make([]writeJob, len(idx))
		for k, i := range idx {
			jobs[k] = batch[i]
		}
		var errs []error
		err := s.runJob(tx, writeJob{fn: func(tx *wtx) error {
			var err error
			errs, err = fn(tx, jobs)
			return err
		}})
		if err == nil {
			for k, i := range idx {
				results[i] = errs[k]
			}
			return
		}
		for _, i := range idx {
			errs = nil
			if err := s.runJob(tx, writeJob{fn: func(tx *wtx) error {
				var err error
				errs, err = fn(tx, batch[i:i+1])
				return err
			}}); err != nil {
				results[i] = err
				continue
			}
			results[i] = errs[0]
		}
	}
	run(msgs, func(tx *wtx, jobs []writeJob) ([]error, error) {
		errs, events, routes, err := settleMessages(tx, jobs)
		wakeEvents, wakeRoutes = wakeEvents || events, wakeRoutes || routes
		return errs, err
	})
	run(calls, func(tx *wtx, jobs []writeJob) ([]error, error) {
		errs, err := settleCalls(tx, jobs)
		// A settled call frees this process's call slot, which a claim may
		// take at once.
		wakeRoutes = true
		return errs, err
	})
	return func() {
		if wakeEvents {
			s.hub.Notify(intake.TopicEvents)
		}
		if wakeRoutes {
			s.notifyRoutes()
		}
	}
}

// settleMessages reads what the results need, decides, and writes the
// decision; a result refused by the decision fails alone.
func settleMessages(tx *wtx, jobs []writeJob) (errs []error, wakeEvents, wakeRoutes bool, err error) {
	ctx := context.Background()
	batch := make([]intake.TimedSettlement, len(jobs))
	for i, j := range jobs {
		batch[i] = j.settle.in
	}
	keys := intake.KeysOf(batch)
	in, err := readSettle(ctx, tx, batch, keys)
	if err != nil {
		return nil, false, false, err
	}
	d := intake.DecideSettlements(in, batch)
	if err := writeSettle(ctx, tx, d); err != nil {
		return nil, false, false, err
	}
	errs = make([]error, len(jobs))
	for i, r := range d.Results {
		jobs[i].settle.out, errs[i] = r.Settled, r.Err
	}
	return errs, d.WakeEvents, d.WakeRoutes, nil
}

// Reads for a batch of processing results, each over a JSON array of
// keys; the transaction holds SQLite's write lock, so nothing moves
// between the reads and the writes.
const (
	settlingMessagesSQL = `SELECT id, connection_id, org_id, endpoint_id, state, attempt FROM messages
		WHERE id IN (SELECT value FROM json_each(?))`
	identitiesSQL = `SELECT i.connection_id, i.key, i.digest, i.event_type, i.message_id, i.expires_at
		FROM json_each(?) k JOIN message_identities i ON i.connection_id = k.value->>0 AND i.key = k.value->>1`
	subjectsSQL = `SELECT l.connection_id, l.provider_object_id, l.app, l.record_id
		FROM json_each(?) k JOIN subject_links l ON l.connection_id = k.value->>0 AND l.provider_object_id = k.value->>1`
	originalsSQL = `SELECT e.connection_id, e.provider_event_id, e.id
		FROM json_each(?) k JOIN events e ON e.connection_id = k.value->>0 AND e.provider_event_id = k.value->>1
		WHERE e.replay = 0 AND e.provider_event_id <> ''`
	consumerLanesSQL = `SELECT c.id, c.org_id, c.enabled, ` + laneColumns + `, ` + controlColumns + `
		FROM consumers c LEFT JOIN consumer_lanes l ON l.consumer_id = c.id
		WHERE c.id IN (SELECT value FROM json_each(?)) AND c.deleted_at IS NULL`
)

func readSettle(ctx context.Context, tx *wtx, batch []intake.TimedSettlement, keys intake.SettleKeys) (intake.SettleRead, error) {
	in := intake.SettleRead{Messages: map[string]intake.SettlingMessage{}, Identities: map[intake.ConnKey]intake.Identity{},
		Subjects: map[intake.ConnKey]intake.Subject{}, Originals: map[intake.ConnKey]string{}}
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.MessageID
	}
	err := query(ctx, tx, settlingMessagesSQL, ids, func(rows *sql.Rows) error {
		var id string
		var m intake.SettlingMessage
		if err := rows.Scan(&id, &m.ConnectionID, &m.OrgID, &m.EndpointID, &m.State, &m.Attempt); err != nil {
			return err
		}
		in.Messages[id] = m
		return nil
	})
	if err != nil {
		return in, err
	}
	var idents [][2]string
	for msg, key := range keys.Identities {
		if m, ok := in.Messages[msg]; ok {
			idents = append(idents, [2]string{m.ConnectionID, key})
		}
	}
	if err := query(ctx, tx, identitiesSQL, idents, func(rows *sql.Rows) error {
		var k intake.ConnKey
		var id intake.Identity
		var expires sql.NullInt64
		if err := rows.Scan(&k.Connection, &k.Key, &id.Digest, &id.EventType, &id.MessageID, &expires); err != nil {
			return err
		}
		id.Key, id.ExpiresAt = k.Key, fromTS(expires)
		in.Identities[k] = id
		return nil
	}); err != nil {
		return in, err
	}
	if err := query(ctx, tx, subjectsSQL, connKeys(keys.Subjects), func(rows *sql.Rows) error {
		var k intake.ConnKey
		var sub intake.Subject
		if err := rows.Scan(&k.Connection, &k.Key, &sub.App, &sub.RecordID); err != nil {
			return err
		}
		in.Subjects[k] = sub
		return nil
	}); err != nil {
		return in, err
	}
	if err := query(ctx, tx, originalsSQL, connKeys(keys.Originals), func(rows *sql.Rows) error {
		var k intake.ConnKey
		var id string
		if err := rows.Scan(&k.Connection, &k.Key, &id); err != nil {
			return err
		}
		in.Originals[k] = id
		return nil
	}); err != nil {
		return in, err
	}
	if in.Consumers, err = readConsumerLanes(ctx, tx, keys.Consumers); err != nil {
		return in, err
	}
	return in, readSettleIssues(ctx, tx, keys.Consumers, &in)
}

// readConsumerLanes reads the consumers that are not deleted, with their
// controls and lanes.
func readConsumerLanes(ctx context.Context, tx *wtx, ids []string) (map[string]intake.ConsumerLane, error) {
	out := map[string]intake.ConsumerLane{}
	err := query(ctx, tx, consumerLanesSQL, ids, func(rows *sql.Rows) error {
		var c intake.ConsumerLane
		var refilled, failing, probe sql.NullInt64
		var everyMS int64
		if err := scanControls(rows, &c.Controls, append([]any{&c.Lane.ConsumerID, &c.Lane.OrgID, &c.Enabled},
			laneDest(&c.Lane, &refilled, &failing, &probe, &everyMS)...)...); err != nil {
			return err
		}
		fillLane(&c.Lane, refilled, failing, probe, everyMS)
		out[c.Lane.ConsumerID] = c
		return nil
	})
	return out, err
}

func connKeys(keys []intake.ConnKey) [][2]string {
	out := make([][2]string, len(keys))
	for i, k := range keys {
		out[i] = [2]string{k.Connection, k.Key}
	}
	return out
}

// query runs a read over keys, encoded as one JSON array, and calls scan
// for each row; with no keys it reads nothing.
func query[K any](ctx context.Context, tx *wtx, q string, keys []K, scan func(*sql.Rows) error) error {
	if len(keys) == 0 {
		return nil
	}
	arg, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, q, string(arg))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exec runs a write over rows, encoded as one JSON array of arrays; with
// no rows it writes nothing.
func exec(ctx context.Context, tx *wtx, q string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, q, string(arg))
	return err
}

// Writes of a decision, each over a JSON array of rows (x.value->>N is
// column N). An upsert reading json_each needs its WHERE to parse.
const (
	putIdentitiesSQL = `INSERT INTO message_identities (connection_id, key, digest, event_type, message_id, expires_at)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5 FROM json_each(?) x WHERE true
		ON CONFLICT (connection_id, key) DO UPDATE SET digest = excluded.digest, event_type = excluded.event_type,
			message_id = excluded.message_id, expires_at = excluded.expires_at`
	insertRoutesSQL = `INSERT INTO routes (event_id, consumer_id, org_id, state, attempt, next_at, order_key, order_at, lease_until)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6, x.value->>7, x.value->>8
		  FROM json_each(?) x`
	insertDeliveriesSQL = `INSERT INTO deliveries (id, org_id, event_id, consumer_id, attempt, outcome, status_code, latency_us, error, at,
		 max_attempts, response)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6, x.value->>7, x.value->>8,
		       x.value->>9, x.value->>10, nullif(x.value->11, 'null') FROM json_each(?) x`
	moveMessagesSQL = `UPDATE messages SET state = x.value->>2, outcome = x.value->>3, error_code = x.value->>4, error_message = x.value->>5,
		       next_attempt_at = x.value->>6, lease_until = NULL, provider_event_id = x.value->>7, settled_at = x.value->>8
		  FROM json_each(?) x WHERE messages.id = x.value->>0 AND messages.attempt = x.value->>1`
	recordAttemptsSQL = `INSERT INTO message_attempts (message_id, attempt, state, outcome, error_code, error_message, at)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6 FROM json_each(?) x WHERE true
		ON CONFLICT (message_id, attempt) DO NOTHING`
	insertNoticesSQL = `INSERT INTO notices (id, org_id, topic, subject, detail, at)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5 FROM json_each(?) x`
)

// writeSettle writes a decision on processing results.
func writeSettle(ctx context.Context, tx *wtx, d intake.SettleDecision) error {
	rows := make([][]any, 0, len(d.Identities))
	for _, p := range d.Identities {
		id := p.Identity
		rows = append(rows, []any{p.ConnectionID, id.Key, id.Digest, id.EventType, id.MessageID, ts(id.ExpiresAt)})
	}
	if err := exec(ctx, tx, putIdentitiesSQL, rows); err != nil {
		return err
	}
	if err := insertEvents(ctx, tx, d.Events); err != nil {
		return err
	}
	if err := insertRoutes(ctx, tx, d.Routes); err != nil {
		return err
	}
	if err := insertDeliveries(ctx, tx, d.Deliveries); err != nil {
		return err
	}
	moves, attempts := make([][]any, 0, len(d.Moves)), make([][]any, 0, len(d.Moves))
	for _, m := range d.Moves {
		st, a := m.Settlement, m.Attempt
		moves = append(moves, []any{st.MessageID, st.Attempt, st.To, st.Outcome, st.ErrorCode, st.ErrorMessage, ts(st.NextAttemptAt),
			st.ProviderEventID, ts(m.SettledAt)})
		attempts = append(attempts, []any{st.MessageID, a.Attempt, a.State, a.Outcome, a.ErrorCode, a.ErrorMessage, ts(a.At)})
	}
	if err := exec(ctx, tx, moveMessagesSQL, moves); err != nil {
		return err
	}
	if err := exec(ctx, tx, recordAttemptsSQL, attempts); err != nil {
		return err
	}
	if err := writeIssues(ctx, tx, d.Issues, d.IssueItems); err != nil {
		return err
	}
	return insertNotices(ctx, tx, d.Notices)
}

// Multi-row inserts of 1 to insertChunk events, built once. Bound as
// parameters, an event's data reaches SQLite as it is, not escaped into a
// JSON array by Go, parsed by SQLite and copied out again, all on the one
// writer.
var insertEventsSQL = multiRow(`INSERT INTO events
		(id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at, received_at,
		 subject_app, subject_record_id, data, data_truncated, object_ids, state, attempt, max_attempts,
		 next_attempt_at, replay, replay_of, created_at, traceparent)
		VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// eventParams is how many parameters an event binds.
const eventParams = 23

// insertEvents inserts events a chunk of rows per statement: full chunks,
// then the rest in one. Each row count is a statement of its own, which
// the writer prepares after its first use.
func insertEvents(ctx context.Context, tx *wtx, events []intake.Event) error {
	args := make([]any, 0, eventParams*min(len(events), insertChunk))
	for start := 0; start < len(events); start += insertChunk {
		part := events[start:min(start+insertChunk, len(events))]
		args = args[:0]
		for _, e := range part {
			objectIDs, err := json.Marshal(e.ObjectIDs)
			if err != nil {
				return err
			}
			var app, record string
			if e.Subject != nil {
				app, record = e.Subject.App, e.Subject.RecordID
			}
			data := string(e.Data)
			if data == "" {
				data = "null"
			}
			args = append(args, text(e.ID), text(e.OrgID), text(e.ConnectionID), text(e.MessageID), text(e.Provider), text(e.Type),
				text(string(e.Kind)), text(e.ProviderEventID), ts(e.OccurredAt), ts(e.ReceivedAt), text(app), text(record), text(data),
				e.DataTruncated, string(objectIDs), text(string(e.State)), e.Attempt, e.MaxAttempts, ts(e.NextAttemptAt), e.Replay,
				text(e.ReplayOf), ts(e.CreatedAt), text(e.TraceParent))
		}
		if _, err := tx.ExecContext(ctx, insertEventsSQL[len(part)], args...); err != nil {
			return err
		}
	}
	return nil
}

// text is s as the values a settle binds as JSON reach SQLite: each byte
// of invalid UTF-8 made U+FFFD, as encoding/json does. So an event's
// columns hold what other rows' copies of them hold (its provider event
// id, its message's).
func text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte ranges as U+FFFD
		b.WriteRune(r)
	}
	return b.String()
}

func insertRoutes(ctx context.Context, tx *wtx, routes []intake.Route) error {
	rows := make([][]any, 0, len(routes))
	for _, r := range routes {
		rows = append(rows, []any{r.EventID, r.ConsumerID, r.OrgID, r.State, r.Attempt, ts(r.NextAt), r.OrderKey, ts(r.OrderAt), ts(r.LeaseUntil)})
	}
	return exec(ctx, tx, insertRoutesSQL, rows)
}

func insertDeliveries(ctx context.Context, tx *wtx, ds []intake.Delivery) error {
	rows := make([][]any, 0, len(ds))
	for _, d := range ds {
		rows = append(rows, []any{d.ID, d.OrgID, d.EventID, d.ConsumerID, d.Attempt, d.Outcome, d.StatusCode, d.Latency.Microseconds(), d.Error, ts(d.At),
			d.MaxAttempts, d.Response})
	}
	return exec(ctx, tx, insertDeliveriesSQL, rows)
}

func insertNotices(ctx context.Context, tx *wtx, ns []intake.Notice) error {
	rows := make([][]any, 0, len(ns))
	for _, n := range ns {
		rows = append(rows, []any{n.ID, n.OrgID, n.Topic, n.Subject, n.Detail, ts(n.At)})
	}
	return exec(ctx, tx, insertNoticesSQL, rows)
}

// settleCalls reads what the call results need, decides, and writes the
// decision; a result refused by the decision fails alone.
func settleCalls(tx *wtx, jobs []writeJob) (errs []error, err error) {
	ctx := context.Background()
	batch := make([]intake.TimedRouteSettlement, len(jobs))
	for i, j := range jobs {
		batch[i] = j.call.in
	}
	in, err := readCalls(ctx, tx, batch)
	if err != nil {
		return nil, err
	}
	d := intake.DecideRouteSettlements(in, batch)
	if err := writeCalls(ctx, tx, d); err != nil {
		return nil, err
	}
	for i, j := range jobs {
		j.call.recorded = d.Recorded[i]
	}
	return d.Errs, nil
}

const (
	eventStatesSQL    = `SELECT id, state FROM events WHERE id IN (SELECT value FROM json_each(?))`
	settlingRoutesSQL = `SELECT r.event_id, r.consumer_id, r.org_id, r.state, r.attempt, r.next_at, r.order_key, r.order_at, r.last_error,
		       r.lease_until
		  FROM json_each(?) k JOIN routes r ON r.event_id = k.value->>0 AND r.consumer_id = k.value->>1`
	routeCountsSQL = `SELECT event_id, count(*), coalesce(sum(state = 'waiting'), 0), coalesce(sum(state = 'waiting' AND last_error <> ''), 0),
		       coalesce(sum(state = 'filtered'), 0), coalesce(sum(state = 'dead'), 0), coalesce(sum(state = 'dropped'), 0)
		  FROM routes WHERE event_id IN (SELECT value FROM json_each(?)) GROUP BY event_id`
)

func readCalls(ctx context.Context, tx *wtx, batch []intake.TimedRouteSettlement) (intake.RouteSettleRead, error) {
	in := intake.RouteSettleRead{Events: map[string]intake.EventState{}, Routes: map[intake.RouteKey]intake.Route{},
		Counts: map[string]intake.RouteCounts{}}
	keys := intake.RouteKeysOf(batch)
	events, consumers := keys.Events, keys.Consumers
	routes := make([][2]string, len(keys.Routes))
	for i, k := range keys.Routes {
		routes[i] = [2]string{k.EventID, k.ConsumerID}
	}
	if err := query(ctx, tx, eventStatesSQL, events, func(rows *sql.Rows) error {
		var id string
		var st intake.EventState
		if err := rows.Scan(&id, &st); err != nil {
			return err
		}
		in.Events[id] = st
		return nil
	}); err != nil {
		return in, err
	}
	if err := query(ctx, tx, settlingRoutesSQL, routes, func(rows *sql.Rows) error {
		var r intake.Route
		var next, orderAt, lease sql.NullInt64
		if err := rows.Scan(&r.EventID, &r.ConsumerID, &r.OrgID, &r.State, &r.Attempt, &next, &r.OrderKey, &orderAt, &r.LastError, &lease); err != nil {
			return err
		}
		r.NextAt, r.OrderAt, r.LeaseUntil = fromTS(next), fromTS(orderAt), fromTS(lease)
		in.Routes[intake.RouteKey{EventID: r.EventID, ConsumerID: r.ConsumerID}] = r
		return nil
	}); err != nil {
		return in, err
	}
	if err := query(ctx, tx, routeCountsSQL, events, func(rows *sql.Rows) error {
		var id string
		var n intake.RouteCounts
		if err := rows.Scan(&id, &n.Total, &n.Waiting, &n.Failed, &n.Filtered, &n.Dead, &n.Dropped); err != nil {
			return err
		}
		in.Counts[id] = n
		return nil
	}); err != nil {
		return in, err
	}
	var err error
	if in.Consumers, err = readConsumerLanes(ctx, tx, consumers); err != nil {
		return in, err
	}
	return in, readCallIssues(ctx, tx, consumers, events, &in)
}

const (
	saveRoutesSQL = `UPDATE routes SET state = x.value->>2, attempt = x.value->>3, next_at = x.value->>4, last_error = x.value->>5,
		       lease_until = NULL
		  FROM json_each(?) x WHERE routes.event_id = x.value->>0 AND routes.consumer_id = x.value->>1`
	saveLanesSQL = `INSERT INTO consumer_lanes (consumer_id, org_id, tokens, refilled_at, failures, failing_since, tripped, probe_at, probe_every_ms)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6, x.value->>7, x.value->>8
		  FROM json_each(?) x WHERE true
		ON CONFLICT (consumer_id) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at, failures = excluded.failures,
			failing_since = excluded.failing_since, tripped = excluded.tripped, probe_at = excluded.probe_at,
			probe_every_ms = excluded.probe_every_ms`
	// Each event's attempt shows the most any of its routes spent.
	moveEventsSQL = `UPDATE events SET state = x.value->>1,
		       attempt = coalesce((SELECT max(r.attempt) FROM routes r WHERE r.event_id = events.id), events.attempt)
		  FROM json_each(?) x WHERE events.id = x.value->>0`
	insertAuditSQL = `INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
		SELECT x.value->>0, x.value->>1, x.value->>2, x.value->>3, x.value->>4, x.value->>5, x.value->>6, x.value->>7 FROM json_each(?) x`
	// disableSQL disables a consumer unless it is disabled or deleted
	// already, and records its audit entry only if it did.
	disableSQL = `UPDATE consumers SET enabled = 0, version = version + 1 WHERE id = ? AND enabled AND deleted_at IS NULL RETURNING org_id`
)

// writeCalls writes a decision on call results.
func writeCalls(ctx context.Context, tx *wtx, d intake.RouteSettleDecision) error {
	if err := insertDeliveries(ctx, tx, d.Deliveries); err != nil {
		return err
	}
	rows := make([][]any, 0, len(d.Routes))
	for _, r := range d.Routes {
		rows = append(rows, []any{r.EventID, r.ConsumerID, r.State, r.Attempt, ts(r.NextAt), r.LastError})
	}
	if err := exec(ctx, tx, saveRoutesSQL, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, l := range d.Lanes {
		rows = append(rows, []any{l.ConsumerID, l.OrgID, l.Tokens, ts(l.RefilledAt), l.Failures, ts(l.FailingSince), l.Tripped, ts(l.ProbeAt),
			l.ProbeEvery.Milliseconds()})
	}
	if err := exec(ctx, tx, saveLanesSQL, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, m := range d.Events {
		rows = append(rows, []any{m.EventID, m.State})
	}
	if err := exec(ctx, tx, moveEventsSQL, rows); err != nil {
		return err
	}
	audit := d.Audit
	for _, a := range d.Disables {
		var org string
		err := tx.QueryRowContext(ctx, disableSQL, a.TargetID).Scan(&org)
		if errors.Is(err, sql.ErrNoRows) {
			continue // disabled or deleted already
		}
		if err != nil {
			return err
		}
		a.OrgID = org
		audit = append(audit, a)
		tx.announce()
	}
	rows = rows[:0]
	for _, a := range audit {
		rows = append(rows, []any{a.ID, a.OrgID, a.Actor, a.Action, a.TargetType, a.TargetID, a.Detail, ts(a.At)})
	}
	if err := exec(ctx, tx, insertAuditSQL, rows); err != nil {
		return err
	}
	if err := writeIssues(ctx, tx, d.Issues, d.IssueItems); err != nil {
		return err
	}
	return insertNotices(ctx, tx, d.Notices)
}

// FanOut writes an event's routes, as intake.DecideFanOut decides them,
// and moves the event off the event queue.
func (s *Store) FanOut(ctx context.Context, now time.Time, f intake.FanOut) (intake.FannedOut, error) {
	var out intake.FannedOut
	err := s.txAfter(ctx, func(tx *wtx) error {
		in := intake.FanOutRead{Routed: map[string]bool{}}
		var lease sql.NullInt64
		var err error
		in.Event, err = scanEvent(tx.QueryRowContext(ctx, `SELECT `+eventColumns+`, lease_until FROM events WHERE id = ?`, f.EventID), &lease)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("event", f.EventID)
		}
		if err != nil {
			return err
		}
		in.Leased = lease.Valid
		if err := query(ctx, tx, routeCountsSQL, []string{f.EventID}, func(rows *sql.Rows) error {
			var id string
			n := &in.Counts
			return rows.Scan(&id, &n.Total, &n.Waiting, &n.Failed, &n.Filtered, &n.Dead, &n.Dropped)
		}); err != nil {
			return err
		}
		if in.Counts.Total > 0 {
			if err := query(ctx, tx, `SELECT consumer_id FROM routes WHERE event_id IN (SELECT value FROM json_each(?))`, []string{f.EventID},
				func(rows *sql.Rows) error {
					var id string
					err := rows.Scan(&id)
					in.Routed[id] = true
					return err
				}); err != nil {
				return err
			}
		}
		consumers := make([]string, 0, len(f.Routes))
		for _, r := range f.Routes {
			consumers = append(consumers, r.ConsumerID)
		}
		if in.Consumers, err = readConsumerLanes(ctx, tx, consumers); err != nil {
			return err
		}
		if err := readFanOutIssues(ctx, tx, consumers, &in); err != nil {
			return err
		}
		if out, err = intake.DecideFanOut(in, f, now); err != nil {
			return err
		}
		if err := writeIssues(ctx, tx, out.Issues, out.IssueItems); err != nil {
			return err
		}
		if err := insertNotices(ctx, tx, out.Notices); err != nil {
			return err
		}
		if err := insertRoutes(ctx, tx, out.Routes); err != nil {
			return err
		}
		if err := insertDeliveries(ctx, tx, out.Deliveries); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE events SET state = ?, next_attempt_at = NULL, lease_until = NULL WHERE id = ?`, out.State, f.EventID)
		return err
	}, func() {
		if out.Wake {
			s.notifyRoutes()
		}
	})
	if err != nil {
		return intake.FannedOut{}, err
	}
	return out, nil
}

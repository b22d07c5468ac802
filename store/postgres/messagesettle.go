package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/intakehq/intake"
)

// A processing result is settled in a transaction it may share with the
// results that arrived while the previous settle was committing, as the
// call settles are: read → decide → write (DESIGN §7). They share the
// read that locks their messages and the statements that write their
// rows; intake.DecideSettlements decides each in turn, each seeing what
// those before it decided. A result that cannot settle (a stale attempt)
// writes nothing and fails alone.

type messageSettleRequest struct {
	now  time.Time
	st   intake.Settlement
	done chan messageSettled
}

type messageSettled struct {
	out intake.Settled
	err error
}

const (
	// messageSettlers is how many batches of processing results may
	// commit at once.
	messageSettlers = 2
	// messageSettleBatch is the most results one transaction takes.
	messageSettleBatch = 64
)

// SettleMessage applies a processing result in one transaction of two
// round trips, which it may share with other results: BEGIN and the
// message's row lock, read with its deduplication identity, travel
// together; the writes, decided in Go, travel with the COMMIT. A batch
// that lost a race on an identity or an event is re-run from the start.
func (s *Store) SettleMessage(ctx context.Context, now time.Time, st intake.Settlement) (intake.Settled, error) {
	if !validIDs(st.MessageID) {
		return intake.Settled{}, notFound("message", st.MessageID)
	}
	req := messageSettleRequest{now: now, st: st, done: make(chan messageSettled, 1)}
	if err := s.messageSettles.put(ctx, s.stop, req); err != nil {
		return intake.Settled{}, err
	}
	// A caller that stops waiting learns nothing of the outcome: the
	// message is settled, or its lease expires, as when a commit's answer
	// is lost.
	var r messageSettled
	select {
	case r = <-req.done:
	case <-ctx.Done():
		return intake.Settled{}, ctx.Err()
	case <-s.done:
		s.failQueued()
		r = <-req.done
	}
	return r.out, r.err
}

// settleMessages settles a batch and answers each request. If the batch's
// transaction fails, each result is settled alone, so that none fails its
// neighbours.
func (s *Store) settleMessages(batch []messageSettleRequest) {
	outs, errs, err := s.settleMessageBatch(context.Background(), batch)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			s.settleMessages([]messageSettleRequest{r})
		}
		return
	}
	for i, r := range batch {
		if err != nil {
			r.done <- messageSettled{err: err}
			continue
		}
		r.done <- messageSettled{out: outs[i], err: errs[i]}
	}
}

// settleMessageBatch settles a batch in one transaction of two round
// trips: the first locks the messages and reads what the results need;
// intake.DecideSettlements decides; the second writes the decision, a
// statement per kind of row, and commits. It returns each result's
// outcome and error; err is the transaction's.
func (s *Store) settleMessageBatch(ctx context.Context, batch []messageSettleRequest) (outs []intake.Settled, errs []error, err error) {
	in := make([]intake.TimedSettlement, len(batch))
	for i, r := range batch {
		in[i] = intake.TimedSettlement{Now: r.now, Settlement: r.st}
	}
	keys := intake.KeysOf(in)
	var d intake.SettleDecision
	var at time.Time
	err = s.pipeline(ctx, func(p *pipeTx) error {
		forCustomPlans(p.b)
		s.queueClock(p.b, &at)
		read := queueSettleRead(p.b, in, keys)
		if err := p.flush(ctx); err != nil {
			return err
		}
		d = intake.DecideSettlements(*read, timedAt(in, at))
		queueSettleWrite(p.b, d, s)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if !at.IsZero() {
		// The calls leased in the commit are handed back with their leases by
		// the caller's clock, as a claim answers them.
		for i := range d.Results {
			for j, c := range d.Results[i].Settled.Calls {
				d.Results[i].Settled.Calls[j].LeaseUntil = rebase(c.LeaseUntil, at, batch[i].now)
			}
		}
	}
	if d.WakeEvents {
		s.hub.Notify(intake.TopicEvents)
	}
	if d.WakeRoutes {
		s.hub.Notify(intake.TopicRoutes)
	}
	outs, errs = make([]intake.Settled, len(batch)), make([]error, len(batch))
	for i, r := range d.Results {
		outs[i], errs[i] = r.Settled, r.Err
	}
	return outs, errs, nil
}

// timedAt is a batch of settlements timed at PostgreSQL's clock at, read
// in the settle's transaction: each one's due times (a failed message's
// retry, its events' first routing) as long after at as the caller
// decided them after its now. The zero at (the store is timed by its
// callers) leaves the batch as it is.
func timedAt(in []intake.TimedSettlement, at time.Time) []intake.TimedSettlement {
	if at.IsZero() {
		return in
	}
	out := make([]intake.TimedSettlement, len(in))
	for i, r := range in {
		r.NextAttemptAt = rebase(r.NextAttemptAt, r.Now, at)
		if len(r.Events) > 0 {
			events := slices.Clone(r.Events)
			for j := range events {
				events[j].NextAttemptAt = rebase(events[j].NextAttemptAt, r.Now, at)
			}
			r.Events = events
		}
		r.Now = at
		out[i] = r
	}
	return out
}

// queueSettleRead queues, for one round trip, the reads a batch of
// results needs: the messages, locked in the order of their ids, each
// with the live identity of its key; the subject links of the events'
// object ids; the events that hold their provider event ids; the
// consumers of their fan-outs. Only the messages are locked: the writes
// catch an identity or an event another process committed since
// (queuePuts, queueEvents).
func queueSettleRead(b *pgx.Batch, batch []intake.TimedSettlement, keys intake.SettleKeys) *intake.SettleRead {
	in := &intake.SettleRead{Messages: map[string]intake.SettlingMessage{}, Identities: map[intake.ConnKey]intake.Identity{},
		Subjects: map[intake.ConnKey]intake.Subject{}, Originals: map[intake.ConnKey]string{}, Consumers: map[string]intake.ConsumerLane{}}
	n := len(batch)
	ids, idKeys, nows := make([]string, n), make([]*string, n), make([]*time.Time, n)
	for i, r := range batch {
		ids[i], nows[i] = r.MessageID, tsPtr(r.Now)
		if key, ok := keys.Identities[r.MessageID]; ok {
			k := text(key)
			idKeys[i] = &k
		}
	}
	// Each identity is looked up by its whole key (the subquery is not
	// flattened: joined, the planner may look up the connection alone and
	// filter every identity it has).
	b.Queue(`SELECT k.n, m.connection_id, m.org_id, m.state, m.attempt, m.endpoint_id,
			i.digest IS NOT NULL, i.digest, i.event_type, i.message_id::text, i.expires_at
		  FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS k (id, key, now, n)
		  JOIN messages m ON m.id = k.id
		  LEFT JOIN LATERAL (SELECT i.digest, i.event_type, i.message_id, i.expires_at FROM message_identities i
		        WHERE i.connection_id = m.connection_id AND i.key = k.key AND (i.expires_at IS NULL OR i.expires_at > k.now)
		        OFFSET 0) AS i ON true
		 ORDER BY m.id FOR UPDATE OF m`, ids, idKeys, nows).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var i int
			var m intake.SettlingMessage
			var live bool
			var digest, eventType, messageID *string
			var expires *time.Time
			if err := rows.Scan(&i, &m.ConnectionID, &m.OrgID, &m.State, &m.Attempt, &m.EndpointID,
				&live, &digest, &eventType, &messageID, &expires); err != nil {
				return err
			}
			r := batch[i-1]
			in.Messages[r.MessageID] = m
			if live {
				key := keys.Identities[r.MessageID]
				in.Identities[intake.ConnKey{Connection: m.ConnectionID, Key: key}] = intake.Identity{Key: key, Digest: *digest,
					EventType: *eventType, MessageID: *messageID, ExpiresAt: fromTS(expires)}
			}
		}
		return rows.Err()
	})
	queueConnKeys(b, keys.Subjects, `SELECT k.n, s.app, s.record_id
		  FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS k (connection_id, object_id, n)
		 CROSS JOIN LATERAL (SELECT l.app, l.record_id FROM subject_links l
		        WHERE l.connection_id = k.connection_id AND l.provider_object_id = k.object_id OFFSET 0) AS s`,
		func(rows pgx.Rows, sent []intake.ConnKey) error {
			var n int
			var sub intake.Subject
			if err := rows.Scan(&n, &sub.App, &sub.RecordID); err != nil {
				return err
			}
			in.Subjects[sent[n-1]] = sub
			return nil
		})
	queueConnKeys(b, keys.Originals, `SELECT k.n, e.id::text
		  FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS k (connection_id, provider_event_id, n)
		 CROSS JOIN LATERAL (SELECT e.id FROM events e WHERE e.connection_id = k.connection_id
		        AND e.provider_event_id = k.provider_event_id AND NOT e.replay AND e.provider_event_id <> '' OFFSET 0) AS e`,
		func(rows pgx.Rows, sent []intake.ConnKey) error {
			var n int
			var id string
			if err := rows.Scan(&n, &id); err != nil {
				return err
			}
			in.Originals[sent[n-1]] = id
			return nil
		})
	queueConsumerLanes(b, keys.Consumers, false, in.Consumers)
	queueSettleIssues(b, ids, keys.Consumers, in)
	return in
}

// queueConnKeys queues a read over keys within connections: q reads
// unnest($1 connections, $2 keys) WITH ORDINALITY as k, and scan finds
// each row's key as sent[k.n-1]. Keys whose connection is not an id match
// nothing and are not sent.
func queueConnKeys(b *pgx.Batch, keys []intake.ConnKey, q string, scan func(rows pgx.Rows, sent []intake.ConnKey) error) {
	var sent []intake.ConnKey
	var conns, values []string
	for _, k := range keys {
		if validIDs(k.Connection) {
			sent = append(sent, k)
			conns, values = append(conns, k.Connection), append(values, text(k.Key))
		}
	}
	if len(sent) == 0 {
		return
	}
	b.Queue(q, conns, values).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := scan(rows, sent); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// queueConsumerLanes queues the read of the consumers that are not
// deleted, with their controls and lanes into out; lock locks the lanes.
func queueConsumerLanes(b *pgx.Batch, ids []string, lock bool, out map[string]intake.ConsumerLane) {
	var valid []string
	for _, id := range ids {
		if validIDs(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return
	}
	q := `SELECT c.enabled, ` + prefixed("c.", controlColumns) + `, ` + laneColumns + `
		FROM consumers c JOIN consumer_lanes l ON l.consumer_id = c.id WHERE c.id = ANY($1::uuid[]) AND c.deleted_at IS NULL ORDER BY c.id`
	if lock {
		q += ` FOR UPDATE OF l`
	}
	b.Queue(q, valid).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c intake.ConsumerLane
			controls, doneC := controlDests(&c.Controls)
			lane, doneL := laneDests(&c.Lane)
			if err := rows.Scan(append(append([]any{&c.Enabled}, controls...), lane...)...); err != nil {
				return err
			}
			doneC()
			doneL()
			out[c.Lane.ConsumerID] = c
		}
		return rows.Err()
	})
}

// queueSettleWrite queues the writes of a decision, a statement for each
// kind of row whatever the batch holds, and the wake-ups.
func queueSettleWrite(b *pgx.Batch, d intake.SettleDecision, s *Store) {
	if len(d.Identities) > 0 {
		queuePuts(b, d.Identities, d)
	}
	if len(d.Events) > 0 {
		queueEvents(b, d.Events)
	}
	queueRoutes(b, d.Routes, s.callerClock)
	queueDeliveries(b, d.Deliveries)
	if len(d.Moves) > 0 {
		queueMoves(b, d.Moves)
	}
	queueIssueWrites(b, d.Issues, d.IssueItems)
	for _, n := range d.Notices {
		queueNotice(b, n)
	}
	if d.WakeEvents {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicEvents], s.instance)
	}
	if d.WakeRoutes {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicRoutes], s.instance)
	}
}

// queuePuts records the identities that were found absent or expired. If
// another process committed a live one for a key since, the upsert
// changes nothing for it and the statement fails on purpose (a division
// by zero: fewer rows than identities), which aborts the transaction
// before its COMMIT; the batch is then re-run, to be judged against the
// other identity. Otherwise the rows stay locked until this one commits.
func queuePuts(b *pgx.Batch, puts []intake.IdentityPut, d intake.SettleDecision) {
	n := len(puts)
	conns, keys, orgs, digests, types, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n)
	expires := make([]*time.Time, n)
	var latest time.Time
	// In the order of their keys, as every batch takes them: two batches
	// of two processes then never wait for each other's rows.
	puts = slices.Clone(puts)
	slices.SortFunc(puts, func(a, b intake.IdentityPut) int {
		return cmp.Or(strings.Compare(a.ConnectionID, b.ConnectionID), strings.Compare(a.Identity.Key, b.Identity.Key))
	})
	for i, p := range puts {
		conns[i], keys[i], orgs[i], digests[i] = p.ConnectionID, text(p.Identity.Key), p.OrgID, text(p.Identity.Digest)
		types[i], messages[i], expires[i] = text(p.Identity.EventType), p.Identity.MessageID, tsPtr(p.Identity.ExpiresAt)
	}
	for _, m := range d.Moves {
		// An identity one result found expired at its own time is expired
		// at the latest.
		if m.Attempt.At.After(latest) {
			latest = m.Attempt.At
		}
	}
	q := b.Queue(`WITH put AS (
			INSERT INTO message_identities (connection_id, key, org_id, digest, event_type, message_id, expires_at)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::uuid[], $7::timestamptz[])
			ON CONFLICT (connection_id, key) DO UPDATE SET digest = excluded.digest, event_type = excluded.event_type,
				message_id = excluded.message_id, expires_at = excluded.expires_at
			WHERE message_identities.expires_at IS NOT NULL AND message_identities.expires_at <= $8
			RETURNING 1)
		SELECT 1 / (SELECT (count(*) = $9)::int FROM put)`,
		conns, keys, orgs, digests, types, messages, expires, ts(latest), n)
	q.Fn = raceOnDivision
}

// queueEvents inserts the events. If another process committed an event
// for one of their provider event ids since the read, the insert skips it
// and the statement fails on purpose (fewer rows than events), as
// queuePuts does; the batch is then re-run, to be decided against it.
func queueEvents(b *pgx.Batch, events []intake.Event) {
	n := len(events)
	ids, orgs, conns, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	providers, types, kinds, providerIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	apps, records, data, objectIDs, states, traces := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n)
	occurred, received, next, created := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	truncated, replay := make([]bool, n), make([]bool, n)
	attempts, maxAttempts := make([]int32, n), make([]int32, n)
	replayOf := make([]*string, n)
	for i, e := range events {
		ids[i], orgs[i], conns[i], messages[i] = e.ID, e.OrgID, e.ConnectionID, e.MessageID
		providers[i], types[i], kinds[i], providerIDs[i] = text(e.Provider), text(e.Type), string(e.Kind), text(e.ProviderEventID)
		if e.Subject != nil {
			apps[i], records[i] = text(e.Subject.App), text(e.Subject.RecordID)
		}
		d := []byte(e.Data)
		if len(d) == 0 {
			d = []byte("null")
		}
		data[i] = string(validUTF8(d))
		ids, _ := json.Marshal(texts(e.ObjectIDs))
		objectIDs[i], states[i], traces[i] = string(ids), string(e.State), text(e.TraceParent)
		occurred[i], received[i], next[i], created[i] = tsPtr(e.OccurredAt), tsPtr(e.ReceivedAt), tsPtr(e.NextAttemptAt), tsPtr(e.CreatedAt)
		truncated[i], replay[i], attempts[i], maxAttempts[i] = e.DataTruncated, e.Replay, int32(e.Attempt), int32(e.MaxAttempts)
		if e.ReplayOf != "" {
			replayOf[i] = &e.ReplayOf
		}
	}
	q := b.Queue(`WITH ins AS (INSERT INTO events
		(id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at, received_at,
		 subject_app, subject_record_id, data, data_truncated, object_ids, state, attempt, max_attempts,
		 next_attempt_at, replay, replay_of, created_at, traceparent)
		SELECT x.id, x.org_id, x.connection_id, x.message_id, x.provider, x.type, x.kind, x.provider_event_id, x.occurred_at,
		       x.received_at, x.subject_app, x.subject_record_id, x.data::json, x.data_truncated,
		       ARRAY(SELECT o.v FROM json_array_elements_text(x.object_ids::json) WITH ORDINALITY AS o (v, n) ORDER BY o.n),
		       x.state, x.attempt, x.max_attempts, x.next_attempt_at, x.replay, x.replay_of, x.created_at, x.traceparent
		  FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[],
		              $9::timestamptz[], $10::timestamptz[], $11::text[], $12::text[], $13::text[], $14::bool[], $15::text[],
		              $16::text[], $17::int[], $18::int[], $19::timestamptz[], $20::bool[], $21::uuid[], $22::timestamptz[], $23::text[])
		    AS x (id, org_id, connection_id, message_id, provider, type, kind, provider_event_id, occurred_at, received_at,
		          subject_app, subject_record_id, data, data_truncated, object_ids, state, attempt, max_attempts,
		          next_attempt_at, replay, replay_of, created_at, traceparent)
		ON CONFLICT DO NOTHING
		RETURNING 1)
		SELECT 1 / (SELECT (count(*) = $24)::int FROM ins)`,
		ids, orgs, conns, messages, providers, types, kinds, providerIDs, occurred, received, apps, records, data, truncated,
		objectIDs, states, attempts, maxAttempts, next, replay, replayOf, created, traces, n)
	q.Fn = raceOnDivision
}

// raceOnDivision reads a statement that divides by zero on purpose when it
// lost a race to another process's commit: errRace, which re-runs the
// transaction.
func raceOnDivision(br pgx.BatchResults) error {
	_, err := br.Exec()
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" {
		return errRace
	}
	return err
}

// queueMoves moves each message and records its attempt, in one
// statement.
func queueMoves(b *pgx.Batch, moves []intake.MessageMove) {
	n := len(moves)
	ids, states, outcomes, codes, errs, providerIDs, orgs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	aStates, aOutcomes, aCodes, aErrs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, aAttempts := make([]int32, n), make([]int32, n)
	next, settled, aAt := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	for i, m := range moves {
		st, a := m.Settlement, m.Attempt
		ids[i], states[i], outcomes[i], codes[i] = st.MessageID, string(st.To), text(st.Outcome), text(st.ErrorCode)
		errs[i], providerIDs[i], orgs[i], attempts[i] = text(st.ErrorMessage), text(st.ProviderEventID), m.OrgID, int32(st.Attempt)
		next[i], settled[i] = tsPtr(st.NextAttemptAt), tsPtr(m.SettledAt)
		aAttempts[i], aStates[i], aOutcomes[i], aCodes[i] = int32(a.Attempt), string(a.State), text(a.Outcome), text(a.ErrorCode)
		aErrs[i], aAt[i] = text(a.ErrorMessage), tsPtr(a.At)
	}
	b.Queue(`WITH x AS (
			SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
			                     $8::text[], $9::timestamptz[], $10::uuid[], $11::int[], $12::text[], $13::text[], $14::text[],
			                     $15::text[], $16::timestamptz[])
			  AS x (id, attempt, state, outcome, error_code, error_message, next_attempt_at, provider_event_id, settled_at,
			        org_id, a_attempt, a_state, a_outcome, a_error_code, a_error_message, a_at)
		), moved AS (
			UPDATE messages m SET state = x.state, outcome = x.outcome, error_code = x.error_code, error_message = x.error_message,
			       next_attempt_at = x.next_attempt_at, lease_until = NULL, provider_event_id = x.provider_event_id,
			       settled_at = x.settled_at
			  FROM x WHERE m.id = x.id AND m.attempt = x.attempt
		)
		INSERT INTO message_attempts (message_id, org_id, attempt, state, outcome, error_code, error_message, at)
		SELECT id, org_id, a_attempt, a_state, a_outcome, a_error_code, a_error_message, a_at FROM x
		ON CONFLICT (message_id, attempt) DO NOTHING`,
		ids, attempts, states, outcomes, codes, errs, next, providerIDs, settled, orgs, aAttempts, aStates, aOutcomes, aCodes, aErrs, aAt)
}

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
// call settles are: each result is applied alone (ApplySettlement, one
// after the other, each seeing the identities those before it recorded),
// and they share the read that locks their messages and the statements
// that write their rows. A result that cannot settle (a stale attempt)
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
// that lost a race on an identity is re-run from the start.
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

// settleMessageBatch applies each request's result in one transaction and
// returns each one's outcome and error; err is the transaction's.
func (s *Store) settleMessageBatch(ctx context.Context, batch []messageSettleRequest) (outs []intake.Settled, errs []error, err error) {
	var w *messageBatch
	err = s.pipeline(ctx, func(p *pipeTx) error {
		w = &messageBatch{s: s, p: p, reqs: batch, put: map[identityKey]intake.Identity{}}
		forCustomPlans(p.b)
		w.read()
		if err := p.flush(ctx); err != nil {
			return err
		}
		outs, errs = make([]intake.Settled, len(batch)), make([]error, len(batch))
		moved := map[string]bool{}
		for i, r := range batch {
			t := &w.locked[i]
			switch {
			case !t.found:
				errs[i] = notFound("message", r.st.MessageID)
			case moved[r.st.MessageID]:
				// Settled by an earlier result of the batch, as its lock
				// would have shown.
				errs[i] = intake.Errorf(intake.ESTALE, "attempt %d of message %s is not current", r.st.Attempt, r.st.MessageID)
			default:
				outs[i], errs[i] = intake.ApplySettlement(ctx, t, t.conn, r.now, r.st)
				var refused *intake.Error
				switch {
				case errs[i] == nil:
					w.keep(t, outs[i])
					moved[r.st.MessageID] = true
				case !errors.As(errs[i], &refused):
					// A read that failed (a subject's, an original
					// event's): the transaction's failure, not the
					// result's.
					return errs[i]
				}
			}
		}
		w.write()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	wakeEvents := false
	for i := range batch {
		if errs[i] != nil {
			continue
		}
		outs[i] = w.settled(outs[i])
		wakeEvents = wakeEvents || intake.Unrouted(outs[i].Events)
	}
	if wakeEvents {
		s.hub.Notify(intake.TopicEvents)
	}
	if w.wake {
		s.hub.Notify(intake.TopicRoutes)
	}
	return outs, errs, nil
}

// identityKey is a key within a connection: a deduplication key, or a
// provider object id.
type identityKey struct{ connection, key string }

// messageBatch is what a batch of settles read under its locks, and what
// the results applied so far will write at the commit.
type messageBatch struct {
	s    *Store
	p    *pipeTx
	reqs []messageSettleRequest

	locked []settleTx
	// subjects are the links read for the events' object ids, by
	// connection and object id (nil: none).
	subjects map[identityKey]*intake.Subject
	// put are the identities recorded by the results kept so far.
	put map[identityKey]intake.Identity

	puts        []identityPut
	events      []intake.Event
	routes      newRoutes
	moves       []messageMove
	notices     []intake.Notice
	notifyEvent bool

	// Read from the commit: the events inserted and the routes leased to
	// the caller, by event; wake, whether a route was left for a claim.
	inserted map[string]bool
	leased   map[string][]leasedRoute
	wake     bool
}

type identityPut struct {
	connection, org string
	ident           intake.Identity
}

type messageMove struct {
	st  intake.Settlement
	a   intake.Attempt
	now time.Time
	org string
}

type leasedRoute struct {
	consumer string
	until    time.Time
}

// read queues the read that locks every message of the batch, in the
// order of its id, with the live identity of each one's key (NULL: none).
// It is not locked: the upsert of the identities catches one committed
// since.
func (w *messageBatch) read() {
	n := len(w.reqs)
	w.locked = make([]settleTx, n)
	ids, keys, nows := make([]string, n), make([]*string, n), make([]*time.Time, n)
	for i, r := range w.reqs {
		t := &w.locked[i]
		t.w = w
		ids[i], nows[i] = r.st.MessageID, tsPtr(r.now)
		if r.st.To == intake.MessageProcessed && r.st.Identity != nil {
			t.identityKey = r.st.Identity.Key
			k := text(r.st.Identity.Key)
			keys[i] = &k
		}
	}
	// Each identity is looked up by its whole key (the subquery is not
	// flattened: joined, the planner may look up the connection alone and
	// filter every identity it has).
	w.p.b.Queue(`SELECT k.n, m.connection_id, m.org_id, m.state, m.attempt, m.endpoint_id,
			i.digest IS NOT NULL, i.digest, i.event_type, i.message_id::text, i.expires_at
		  FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS k (id, key, now, n)
		  JOIN messages m ON m.id = k.id
		  LEFT JOIN LATERAL (SELECT i.digest, i.event_type, i.message_id, i.expires_at FROM message_identities i
		        WHERE i.connection_id = m.connection_id AND i.key = k.key AND (i.expires_at IS NULL OR i.expires_at > k.now)
		        OFFSET 0) AS i ON true
		 ORDER BY m.id FOR UPDATE OF m`, ids, keys, nows).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var n int
			var msg intake.LockedMessage
			var conn string
			var live bool
			var digest, eventType, messageID *string
			var expires *time.Time
			if err := rows.Scan(&n, &conn, &msg.OrgID, &msg.State, &msg.Attempt, &msg.EndpointID,
				&live, &digest, &eventType, &messageID, &expires); err != nil {
				return err
			}
			t := &w.locked[n-1]
			t.found, t.conn, t.msg = true, conn, msg
			if live {
				t.identity = &intake.Identity{Key: t.identityKey, Digest: *digest, EventType: *eventType, MessageID: *messageID,
					ExpiresAt: fromTS(expires)}
			}
		}
		return rows.Err()
	})
	w.readSubjects()
}

// readSubjects queues the read of the subject links of the object ids of
// the events that carry no subject, in the same round trip.
func (w *messageBatch) readSubjects() {
	w.subjects = map[identityKey]*intake.Subject{}
	var conns, objects []string
	for _, r := range w.reqs {
		for _, e := range r.st.Events {
			if e.Subject != nil || !validIDs(e.ConnectionID) {
				continue
			}
			for _, obj := range e.ObjectIDs {
				k := identityKey{e.ConnectionID, text(obj)}
				if _, queued := w.subjects[k]; !queued {
					w.subjects[k] = nil
					conns, objects = append(conns, k.connection), append(objects, k.key)
				}
			}
		}
	}
	if len(conns) == 0 {
		return
	}
	w.p.b.Queue(`SELECT k.connection_id::text, k.object_id, s.app, s.record_id
		  FROM unnest($1::uuid[], $2::text[]) AS k (connection_id, object_id)
		 CROSS JOIN LATERAL (SELECT l.app, l.record_id FROM subject_links l
		        WHERE l.connection_id = k.connection_id AND l.provider_object_id = k.object_id OFFSET 0) AS s`,
		conns, objects).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var k identityKey
			var sub intake.Subject
			if err := rows.Scan(&k.connection, &k.key, &sub.App, &sub.RecordID); err != nil {
				return err
			}
			w.subjects[k] = &sub
		}
		return rows.Err()
	})
}

// keep makes a result that applied part of the batch: its writes go to
// the commit, and the results after it judge their identities against
// the one it recorded.
func (w *messageBatch) keep(t *settleTx, out intake.Settled) {
	if t.putIdentity != nil {
		w.puts = append(w.puts, *t.putIdentity)
		w.put[identityKey{t.putIdentity.connection, t.putIdentity.ident.Key}] = t.putIdentity.ident
	}
	w.events = append(w.events, t.events...)
	for _, f := range t.fanOuts {
		w.routes.add(f.FanOut, f.now, leaseEnd(f.now, f.Lease))
	}
	if t.move != nil {
		w.moves = append(w.moves, *t.move)
	}
	w.notices = append(w.notices, t.notices...)
	// Events fanned out here need no router woken for them.
	w.notifyEvent = w.notifyEvent || intake.Unrouted(out.Events)
}

// settled is out as committed: ApplySettlement counted every event it
// queued, and those an existing row made the insert skip were not
// created; the routes leased to the caller are its calls.
func (w *messageBatch) settled(out intake.Settled) intake.Settled {
	created := out.Events[:0]
	for _, e := range out.Events {
		if w.inserted[e.ID] {
			created = append(created, e)
		}
	}
	out.Events = created
	for _, e := range created {
		for _, l := range w.leased[e.ID] {
			out.Calls = append(out.Calls, intake.RouteClaim{Event: e, ConsumerID: l.consumer, Attempt: 1, LeaseUntil: l.until})
		}
	}
	return out
}

// write queues what the kept results write, a statement for each kind of
// row whatever the batch holds.
func (w *messageBatch) write() {
	b := w.p.b
	if len(w.puts) > 0 {
		w.queuePuts(b)
	}
	w.inserted, w.leased = map[string]bool{}, map[string][]leasedRoute{}
	if len(w.events) > 0 {
		w.queueEvents(b)
	}
	if !w.routes.empty() {
		b.Queue(insertRoutesSQL(""), w.routes.args(w.s)...).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var eventID, consumerID string
				var state intake.RouteState
				var until *time.Time
				if err := rows.Scan(&eventID, &consumerID, &state, &until); err != nil {
					return err
				}
				switch {
				case state != intake.RouteWaiting:
				case until != nil:
					w.leased[eventID] = append(w.leased[eventID], leasedRoute{consumer: consumerID, until: fromTS(until)})
				default:
					w.wake = true
				}
			}
			return rows.Err()
		})
	}
	if len(w.moves) > 0 {
		w.queueMoves(b)
	}
	for _, n := range w.notices {
		queueNotice(b, n)
	}
	if w.notifyEvent {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicEvents], w.s.instance)
	}
}

// queuePuts records the identities that were found absent or expired. If
// another process committed a live one for a key since, the upsert
// changes nothing for it and the statement fails on purpose (a division
// by zero: fewer rows than identities), which aborts the transaction
// before its COMMIT; the batch is then re-run, to be judged against the
// other identity. Otherwise the rows stay locked until this one commits.
func (w *messageBatch) queuePuts(b *pgx.Batch) {
	n := len(w.puts)
	conns, keys, orgs, digests, types, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n)
	expires := make([]*time.Time, n)
	var latest time.Time
	// In the order of their keys, as every batch takes them: two batches
	// of two processes then never wait for each other's rows.
	slices.SortFunc(w.puts, func(a, b identityPut) int {
		return cmp.Or(strings.Compare(a.connection, b.connection), strings.Compare(a.ident.Key, b.ident.Key))
	})
	for i, p := range w.puts {
		conns[i], keys[i], orgs[i], digests[i] = p.connection, text(p.ident.Key), p.org, text(p.ident.Digest)
		types[i], messages[i], expires[i] = text(p.ident.EventType), p.ident.MessageID, tsPtr(p.ident.ExpiresAt)
	}
	for _, r := range w.reqs {
		// An identity one result found expired at its own time is expired
		// at the latest.
		if r.now.After(latest) {
			latest = r.now
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
	q.Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" {
			return errRace
		}
		return err
	}
}

// queueEvents inserts the events, skipping those whose (connection,
// provider event id) a non-replay event holds, and reads which it
// inserted.
func (w *messageBatch) queueEvents(b *pgx.Batch) {
	n := len(w.events)
	ids, orgs, conns, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	providers, types, kinds, providerIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	apps, records, data, objectIDs, states, traces := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n)
	occurred, received, next, created := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	truncated, replay := make([]bool, n), make([]bool, n)
	attempts, maxAttempts := make([]int32, n), make([]int32, n)
	replayOf := make([]*string, n)
	for i, e := range w.events {
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
	b.Queue(`INSERT INTO events
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
		RETURNING id::text`,
		ids, orgs, conns, messages, providers, types, kinds, providerIDs, occurred, received, apps, records, data, truncated,
		objectIDs, states, attempts, maxAttempts, next, replay, replayOf, created, traces).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			w.inserted[id] = true
		}
		return rows.Err()
	})
}

// queueMoves moves each message and records its attempt, in one
// statement.
func (w *messageBatch) queueMoves(b *pgx.Batch) {
	n := len(w.moves)
	ids, states, outcomes, codes, errs, providerIDs, orgs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	aStates, aOutcomes, aCodes, aErrs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, aAttempts := make([]int32, n), make([]int32, n)
	next, settled, aAt := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	for i, m := range w.moves {
		st, a := m.st, m.a
		ids[i], states[i], outcomes[i], codes[i] = st.MessageID, string(st.To), text(st.Outcome), text(st.ErrorCode)
		errs[i], providerIDs[i], orgs[i], attempts[i] = text(st.ErrorMessage), text(st.ProviderEventID), m.org, int32(st.Attempt)
		next[i] = tsPtr(st.NextAttemptAt)
		if st.To != intake.MessageFailed {
			settled[i] = tsPtr(m.now)
		}
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

// settleTx is ApplySettlement's view of one result in a batch: what was
// read with its message's row lock, and what it will write, kept for the
// commit only if it applies.
type settleTx struct {
	w     *messageBatch
	found bool
	conn  string
	msg   intake.LockedMessage // its org is the org of the rows the settlement adds
	// identityKey is the key whose live identity was read with the lock,
	// identity what was found (nil: none).
	identityKey string
	identity    *intake.Identity

	putIdentity *identityPut
	events      []intake.Event
	fanOuts     []plannedFanOut
	move        *messageMove
	notices     []intake.Notice
}

type plannedFanOut struct {
	intake.FanOut
	now time.Time
}

// LockMessage returns what the batch read when it locked the row.
func (t *settleTx) LockMessage(ctx context.Context, msgID string) (intake.LockedMessage, error) {
	return t.msg, nil
}

func (t *settleTx) InsertNotice(ctx context.Context, n intake.Notice) error {
	t.notices = append(t.notices, n)
	return nil
}

// Identity returns the identity an earlier result of the batch recorded
// for the key, or else the one read with the row lock.
func (t *settleTx) Identity(ctx context.Context, connectionID, key string, now time.Time) (*intake.Identity, error) {
	if key != t.identityKey {
		return nil, errors.New("postgres: settle asked for an identity it did not read")
	}
	if ident, ok := t.w.put[identityKey{connectionID, key}]; ok {
		return &ident, nil
	}
	return t.identity, nil
}

// PutIdentity records an identity that Identity found absent or expired,
// at the commit (queuePuts).
func (t *settleTx) PutIdentity(ctx context.Context, connectionID string, ident intake.Identity) error {
	t.putIdentity = &identityPut{connection: connectionID, org: t.msg.OrgID, ident: ident}
	return nil
}

func (t *settleTx) OriginalEvent(ctx context.Context, connectionID, providerEventID string) (string, error) {
	if err := t.w.p.flush(ctx); err != nil {
		return "", err
	}
	var eventID string
	err := t.w.p.conn.QueryRow(ctx, `SELECT id FROM events
		WHERE connection_id = $1 AND provider_event_id = $2 AND NOT replay AND provider_event_id <> ''`,
		connectionID, text(providerEventID)).Scan(&eventID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return eventID, err
}

// InsertEvent keeps the event for the commit's insert; whether it
// inserted a row is known once the commit returns (settled reads it then).
func (t *settleTx) InsertEvent(ctx context.Context, e intake.Event) (bool, error) {
	t.events = append(t.events, e)
	return true, nil
}

// InsertRoutes keeps a planned event's routes for the commit's insert,
// which writes none if the event's own insert was skipped.
func (t *settleTx) InsertRoutes(_ context.Context, e intake.Event, f intake.FanOut, now time.Time) error {
	t.fanOuts = append(t.fanOuts, plannedFanOut{FanOut: f, now: now})
	return nil
}

func (t *settleTx) UpdateMessage(ctx context.Context, st intake.Settlement, a intake.Attempt, now time.Time) error {
	t.move = &messageMove{st: st, a: a, now: now, org: t.msg.OrgID}
	return nil
}

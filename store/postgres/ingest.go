package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/intakehq/intake"
)

type ingestRequest struct {
	m    *intake.Message
	done chan error
	// state is ingestQueued until a committer takes the request or its
	// caller, past the commit wait, withdraws it: whichever comes first
	// owns m.
	state atomic.Int32
}

const (
	ingestQueued int32 = iota
	ingestTaken
	ingestWithdrawn
)

// take claims r for a committer, unless its caller withdrew it.
func (r *ingestRequest) take() bool { return r.state.CompareAndSwap(ingestQueued, ingestTaken) }

var errClosed = errors.New("postgres: store closed")

// committers is how many batches may be committing at once. While one
// waits for its WAL flush the next gathers the requests that arrive
// meanwhile, and PostgreSQL flushes concurrent commits together.
const committers = 2

// Ingest hands m to a committer and waits until the commit holding it
// returns. A lone request commits at once; requests that arrive while
// commits are in flight share the next one. A message handed over to the
// local worker commits under its first lease and wakes no one: no other
// worker could claim it.
//
// It waits at most the store's commit wait: past it, PostgreSQL is not
// answering (a partition, a hung connection) and the webhook is answered
// 503 rather than left hanging past the provider's own timeout. A request
// still queued then is withdrawn, its message let go at once rather than
// held until a committer reaches it; one being committed is abandoned with
// its commit at the committer's deadline. Such a commit may land all the
// same; the provider's retry is then deduplicated.
func (s *Store) Ingest(ctx context.Context, m *intake.Message) error {
	if err := intake.CheckIngest(m); err != nil {
		return err
	}
	req := &ingestRequest{m: m, done: make(chan error, 1)}
	wait := time.NewTimer(s.commitWait)
	defer wait.Stop()
	qctx, cancel := context.WithTimeout(ctx, s.commitWait)
	defer cancel()
	if err := s.ingest.put(qctx, s.stop, req); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return s.unanswered()
		}
		return err
	}
	// Wait for the commit even if ctx ends: the caller must not acknowledge
	// a message whose fate is unknown, and must not assume it was dropped.
	select {
	case err := <-req.done:
		return err
	case <-wait.C:
		if req.state.CompareAndSwap(ingestQueued, ingestWithdrawn) {
			req.m = nil
		}
		return s.unanswered()
	case <-s.done:
		// The store closed after req was queued: fail what the committers
		// left behind (req among them, unless it was committed).
		s.failQueued()
		return <-req.done
	}
}

// unanswered is the error of an ingest whose commit did not return within
// the commit wait: PostgreSQL is unreachable as far as anyone can tell.
func (s *Store) unanswered() error {
	err := &intake.Error{Code: intake.EUNAVAILABLE, Message: "storage did not answer in time; try again shortly",
		Err: fmt.Errorf("postgres: no commit within %v", s.commitWait)}
	if s.outage != nil {
		s.outage.Failed(err)
	}
	return err
}

// commitLoop runs the ingest committers and the message and call settlers
// until the store closes.
func (s *Store) commitLoop() {
	defer close(s.done)
	var wg sync.WaitGroup
	for range committers {
		wg.Go(func() {
			s.ingest.run(s.stop, func(batch []*ingestRequest) {
				if s.commitBatch(batch) {
					s.hub.Notify(intake.TopicMessages)
				}
			})
		})
	}
	for range messageSettlers {
		wg.Go(func() { s.messageSettles.run(s.stop, s.settleMessages) })
	}
	for range routeSettlers {
		wg.Go(func() { s.routeSettles.run(s.stop, s.settleRoutes) })
	}
	wg.Wait()
	s.failQueued()
}

// failQueued fails the ingests and settles left queued when the store
// closed.
func (s *Store) failQueued() {
	s.ingest.drain(func(r *ingestRequest) {
		if r.take() {
			r.done <- classify(errClosed)
		}
	})
	s.messageSettles.drain(func(r messageSettleRequest) { r.done <- messageSettled{err: classify(errClosed)} })
	s.routeSettles.drain(func(r routeSettleRequest) { r.done <- routeSettled{err: classify(errClosed)} })
}

// commitBatch writes the batch in one transaction that also notifies the
// other processes when it holds a queued message: BEGIN, the inserts and
// the COMMIT travel in one round trip. If it fails, each request
// is committed alone, so one bad row cannot fail its neighbours. It reports
// whether a queued message was committed, for the local workers' wake-up.
//
// Requests their callers withdrew are passed over. The batch has the
// commit wait to commit: by then every caller in it has answered 503, so
// a committer never stays on a link that does not answer (a partition
// lasts as long as it lasts) while the requests queued behind it wait.
func (s *Store) commitBatch(all []*ingestRequest) (queued bool) {
	batch := all[:0]
	for _, r := range all {
		if r.take() {
			batch = append(batch, r)
		}
	}
	if len(batch) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.commitWait)
	defer cancel()
	err := s.pipeline(ctx, func(p *pipeTx) error { return s.queueMessages(p.b, batch) })
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			r.done <- err
		}
		return err == nil && anyQueued(batch)
	}
	for _, r := range batch {
		err := s.pipeline(ctx, func(p *pipeTx) error { return s.queueMessages(p.b, []*ingestRequest{r}) })
		queued = queued || (err == nil && r.m.State == intake.MessageQueued)
		r.done <- err
	}
	return queued
}

func anyQueued(batch []*ingestRequest) bool {
	for _, r := range batch {
		if r.m.State == intake.MessageQueued {
			return true
		}
	}
	return false
}

// messageRows is a batch of messages column by column, as unnest takes it,
// and the bodies of those that have one.
type messageRows struct {
	id, org, conn, endpoint, method, query, digest, state       []string
	providerEventID, outcome, errorCode, errorMessage, replayOf []string
	traceparent                                                 []string
	receivedAt, nextAttemptAt, leaseUntil                       []pgtype.Timestamptz
	attempt, maxAttempts                                        []int32

	bodyID, bodyOrg, header, blobKey []string
	bodyAt                           []pgtype.Timestamptz
	body                             [][]byte
}

func (r *messageRows) add(m *intake.Message) error {
	r.id, r.org, r.conn, r.endpoint = append(r.id, m.ID), append(r.org, m.OrgID), append(r.conn, m.ConnectionID), append(r.endpoint, m.EndpointID)
	r.method, r.query, r.digest = append(r.method, text(m.Method)), append(r.query, text(m.Query)), append(r.digest, text(m.Digest))
	r.state, r.providerEventID = append(r.state, string(m.State)), append(r.providerEventID, text(m.ProviderEventID))
	r.outcome, r.errorCode, r.errorMessage = append(r.outcome, m.Outcome), append(r.errorCode, m.ErrorCode), append(r.errorMessage, text(m.ErrorMessage))
	r.replayOf, r.traceparent = append(r.replayOf, m.ReplayOf), append(r.traceparent, text(m.TraceParent))
	r.receivedAt, r.nextAttemptAt = append(r.receivedAt, timestamptz(m.ReceivedAt)), append(r.nextAttemptAt, timestamptz(m.NextAttemptAt))
	r.leaseUntil = append(r.leaseUntil, timestamptz(m.LeaseUntil))
	r.attempt, r.maxAttempts = append(r.attempt, int32(m.Attempt)), append(r.maxAttempts, int32(m.MaxAttempts))
	if m.BodyExpired {
		return nil // a replay of a message whose body is gone: the record, no body
	}
	h, err := json.Marshal(storableHeader(m.Header))
	if err != nil {
		return err
	}
	body := m.Body
	if body == nil {
		body = []byte{}
	}
	r.bodyID, r.bodyOrg, r.header, r.body = append(r.bodyID, m.ID), append(r.bodyOrg, m.OrgID), append(r.header, string(h)), append(r.body, body)
	r.blobKey, r.bodyAt = append(r.blobKey, m.BlobKey), append(r.bodyAt, timestamptz(m.ReceivedAt))
	return nil
}

// insertMessages inserts the batch's messages and bodies in tx.
func (s *Store) insertMessages(ctx context.Context, tx pgx.Tx, batch []*ingestRequest) error {
	b := &pgx.Batch{}
	if err := s.queueMessages(b, batch); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// queueMessages queues the inserts of the batch's messages and bodies,
// each table with one multi-row INSERT, and the notification for the
// commit when a message is queued (one handed over is leased: no other
// process may claim it yet).
func (s *Store) queueMessages(b *pgx.Batch, batch []*ingestRequest) error {
	var r messageRows
	for _, req := range batch {
		if err := r.add(req.m); err != nil {
			return err
		}
	}
	b.Queue(`INSERT INTO messages
		(id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts,
		 next_attempt_at, lease_until, provider_event_id, outcome, error_code, error_message, replay_of, traceparent)
		SELECT id::uuid, org_id::uuid, connection_id::uuid, endpoint_id::uuid, method, query, digest, received_at, state,
		       attempt, max_attempts,
		       -- a message (received or replayed) enters due at once: by PostgreSQL's clock
		       CASE WHEN $20::bool OR next_attempt_at IS NULL THEN next_attempt_at ELSE statement_timestamp() END,
		       -- a handed-over message's lease, as long from now by PostgreSQL's clock as the caller's is from its receipt
		       CASE WHEN $20::bool THEN lease_until ELSE statement_timestamp() + (lease_until - received_at) END,
		       provider_event_id, outcome, error_code, error_message,
		       NULLIF(replay_of, '')::uuid, traceparent
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		              $8::timestamptz[], $9::text[], $10::int[], $11::int[], $12::timestamptz[], $13::timestamptz[],
		              $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[])
		    AS t(id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt,
		         max_attempts, next_attempt_at, lease_until, provider_event_id, outcome, error_code, error_message,
		         replay_of, traceparent)`,
		r.id, r.org, r.conn, r.endpoint, r.method, r.query, r.digest, r.receivedAt, r.state, r.attempt, r.maxAttempts,
		r.nextAttemptAt, r.leaseUntil, r.providerEventID, r.outcome, r.errorCode, r.errorMessage, r.replayOf, r.traceparent,
		s.callerClock)
	b.Queue(`INSERT INTO message_bodies (message_id, org_id, header, body, blob_key, received_at)
		SELECT id::uuid, org_id::uuid, header::jsonb, body, blob_key, received_at
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::timestamptz[])
		    AS t(id, org_id, header, body, blob_key, received_at)`,
		r.bodyID, r.bodyOrg, r.header, r.body, r.blobKey, r.bodyAt)
	if anyQueued(batch) {
		b.Queue(`SELECT pg_notify($1, $2)`, channels[intake.TopicMessages], s.instance)
	}
	return nil
}

// storableHeader drops NUL bytes, which jsonb cannot hold; net/http refuses
// them in header values anyway.
func storableHeader(h http.Header) http.Header {
	for _, vs := range h {
		for _, v := range vs {
			if strings.IndexByte(v, 0) >= 0 {
				out := make(http.Header, len(h))
				for k, vs := range h {
					out[k] = texts(vs)
				}
				return out
			}
		}
	}
	return h
}

func timestamptz(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t.UTC().Truncate(time.Microsecond), Valid: true}
}

// InsertReplay records an operator's replay of a message, with its audit
// entries, in one transaction of its own.
func (s *Store) InsertReplay(ctx context.Context, m *intake.Message, audit ...intake.AuditEntry) error {
	if err := intake.CheckReplay(m); err != nil {
		return err
	}
	err := s.audited(ctx, audit, func(tx pgx.Tx) error { return s.insertReplays(ctx, tx, []*intake.Message{m}) })
	if err == nil {
		s.hub.Notify(intake.TopicMessages)
	}
	return err
}

// insertReplays records replays in tx, each checked by CheckReplay.
func (s *Store) insertReplays(ctx context.Context, tx pgx.Tx, ms []*intake.Message) error {
	batch := make([]*ingestRequest, len(ms))
	for i, m := range ms {
		if m.BlobKey != "" && !m.BodyExpired {
			// A replay names its original's object only while a body
			// still names it: once none does, the sweeper may delete the
			// object. FOR SHARE holds that body until this commits.
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM message_bodies WHERE blob_key = $1 LIMIT 1 FOR SHARE`, m.BlobKey).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("message body", m.ReplayOf)
			}
			if err != nil {
				return err
			}
		}
		batch[i] = &ingestRequest{m: m}
	}
	if len(batch) == 0 {
		return nil
	}
	return s.insertMessages(ctx, tx, batch)
}

package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"

	"github.com/intakehq/intake"
)

// writeJob is one unit of work for the writer: it runs inside a savepoint
// of the shared transaction, so its failure undoes only its own writes.
type writeJob struct {
	ctx context.Context
	fn  func(*wtx) error
	msg *intake.Message // an ingest: inserted with the batch's other ingests
	hdr string          // an ingest's header as JSON, encoded by the caller
	// settle and call are results, settled with the batch's others of
	// their kind (runSettles).
	settle *messageSettle
	call   *routeSettle
	after  func() // runs once the commit holding the job returned
	done   chan error
	// background marks the search indexer's steps, which yield to the
	// others (see indexLoop).
	background bool
}

var errClosed = errors.New("sqlite: store closed")

// tx runs fn as part of the next group commit and returns once that commit
// is durable (or fn failed). Every write of the store goes through submit:
// SQLite has one writer, and one fsync serves every job of a batch.
func (s *Store) tx(ctx context.Context, fn func(*wtx) error) error {
	return s.submit(writeJob{ctx: ctx, fn: fn})
}

// submit hands a job to the writer and waits for the commit that holds it.
func (s *Store) submit(job writeJob) error {
	job.done = make(chan error, 1)
	if !job.background {
		s.foreground.Add(1)
	}
	ctx := job.ctx
	select {
	case s.jobs <- job:
	case <-s.stop:
		return classify(errClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
	// Wait for the commit even if ctx ends: a caller must never assume its
	// write was dropped, nor acknowledge one whose fate is unknown.
	select {
	case err := <-job.done:
		return err
	case <-s.done:
		// The writer stopped: a job sent as the store closed may have
		// reached the queue after the writer failed what it held, so
		// fail what is left (job among them, unless it was committed).
		s.failQueued()
		return <-job.done
	}
}

// Ingest commits a received message; concurrent calls share commits. A
// message handed over to the local worker commits under its first lease
// and wakes no one: no other worker could claim it.
func (s *Store) Ingest(ctx context.Context, m *intake.Message) error {
	if err := intake.CheckIngest(m); err != nil {
		return err
	}
	// Encoded here, on the caller's goroutine: the writer is the one
	// goroutine every write waits for.
	hdr, err := json.Marshal(m.Header)
	if err != nil {
		return err
	}
	job := writeJob{ctx: ctx, msg: m, hdr: string(hdr)}
	if m.State == intake.MessageQueued {
		job.after = func() { s.hub.Notify(intake.TopicMessages) }
	}
	return s.submit(job)
}

// commitLoop is the writer: it takes the jobs waiting (a lone job commits
// at once; jobs that arrive during a commit share the next), runs each in a
// savepoint of one transaction, commits, and answers each job.
func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]writeJob, 0, s.batch)
	for {
		batch = batch[:0]
		select {
		case j := <-s.jobs:
			batch = append(batch, j)
		case <-s.stop:
			s.failQueued()
			return
		}
		batch = s.take(batch)
		// Before committing, let the goroutines that are ready to run do
		// so, while that brings more jobs: requests already being served
		// then share this commit instead of waiting for the next. With
		// nothing else ready to run, this costs nothing and waits for
		// nothing, so a lone request still commits at once.
		for range maxYields {
			n := len(batch)
			if n == s.batch {
				break
			}
			runtime.Gosched()
			if batch = s.take(batch); len(batch) == n {
				break
			}
		}
		s.commitBatch(batch)
	}
}

// maxYields bounds how many times the writer yields before a commit.
const maxYields = 4

// take adds the jobs waiting to batch, up to the batch limit.
func (s *Store) take(batch []writeJob) []writeJob {
	for len(batch) < s.batch {
		select {
		case j := <-s.jobs:
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

func (s *Store) failQueued() {
	for {
		select {
		case j := <-s.jobs:
			j.done <- classify(errClosed)
		default:
			return
		}
	}
}

func (s *Store) commitBatch(batch []writeJob) {
	ctx := context.Background()
	results := make([]error, len(batch))
	fail := func(err error) {
		for _, j := range batch {
			j.done <- classify(err)
		}
	}
	s.prepareMissed(ctx)
	s.prepareInserts(ctx, batch)
	tx, err := s.begin(ctx)
	if err != nil {
		fail(err)
		return
	}
	if err := insertIngests(tx, batch); err != nil {
		// An insert of the ingests failed, which rolled back the whole
		// transaction: start again, each ingest in its own savepoint, so
		// one bad row cannot fail its neighbours.
		tx.Rollback()
		if tx, err = s.begin(ctx); err != nil {
			fail(err)
			return
		}
		for i, j := range batch {
			if j.msg != nil {
				results[i] = s.runJob(tx, writeJob{fn: func(tx *wtx) error { return insertMessage(j.ctx, tx, j.msg, j.hdr) }})
			}
		}
	}
	for i, j := range batch {
		if j.fn != nil {
			results[i] = s.runJob(tx, j)
		}
	}
	settled := s.runSettles(tx, batch, results)
	err = tx.Commit()
	if tx.changed {
		// Even after a failed commit: whether it landed is unknown, and a
		// needless move costs caches one reload.
		s.changes.Move()
	}
	if err != nil {
		fail(err)
		return
	}
	settled()
	for i, j := range batch {
		if results[i] == nil && j.after != nil {
			j.after()
		}
		j.done <- results[i]
	}
}

func (s *Store) begin(ctx context.Context) (*wtx, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &wtx{Tx: tx, s: s}, nil
}

// insertChunk bounds the rows of one multi-row insert, well inside
// SQLite's limit on bound parameters.
const insertChunk = 64

// Multi-row inserts of 1 to insertChunk rows, built once. OR ROLLBACK
// spares SQLite a statement journal (a copy of every page the statement
// changes, kept to undo the statement alone): a failed insert ends the
// whole transaction instead, and commitBatch starts it again row by row.
var (
	insertMessagesSQL = multiRow("INSERT OR ROLLBACK"+insertMessageCols, messageRow)
	insertBodiesSQL   = multiRow("INSERT OR ROLLBACK"+insertBodyCols, bodyRow)
)

// multiRow returns head followed by n rows, for n from 1 to insertChunk,
// indexed by n.
func multiRow(head, row string) []string {
	out := make([]string, insertChunk+1)
	var q strings.Builder
	q.WriteString(head)
	for n := 1; n <= insertChunk; n++ {
		if n > 1 {
			q.WriteString(", ")
		}
		q.WriteString(row)
		out[n] = q.String()
	}
	return out
}

// prepareInserts readies the multi-row inserts the batch's ingests will
// use: full chunks and the remainder, of messages and of bodies.
func (s *Store) prepareInserts(ctx context.Context, batch []writeJob) {
	msgs, bodies := 0, 0
	for _, j := range batch {
		if j.msg != nil {
			msgs++
			if !j.msg.BodyExpired {
				bodies++
			}
		}
	}
	for _, n := range []int{min(msgs, insertChunk), msgs % insertChunk} {
		if n > 0 {
			s.prepareOnce(ctx, insertMessagesSQL[n])
		}
	}
	for _, n := range []int{min(bodies, insertChunk), bodies % insertChunk} {
		if n > 0 {
			s.prepareOnce(ctx, insertBodiesSQL[n])
		}
	}
}

// insertIngests inserts the batch's ingests, messages and their bodies, a
// chunk of rows per statement; each statement is prepared once per row
// count. It runs first in the transaction, so a failure rolls back nothing
// but itself.
func insertIngests(tx *wtx, batch []writeJob) error {
	ctx := context.Background()
	var ingests []writeJob
	for _, j := range batch {
		if j.msg != nil {
			ingests = append(ingests, j)
		}
	}
	for start := 0; start < len(ingests); start += insertChunk {
		part := ingests[start:min(start+insertChunk, len(ingests))]
		margs := make([]any, 0, 19*len(part))
		bargs := make([]any, 0, 4*len(part))
		for _, j := range part {
			m := j.msg
			margs = append(margs, m.ID, m.OrgID, m.ConnectionID, m.EndpointID, m.Method, m.Query, m.Digest, ts(m.ReceivedAt),
				m.State, m.Attempt, m.MaxAttempts, ts(m.NextAttemptAt), ts(m.LeaseUntil), m.ProviderEventID, m.Outcome,
				m.ErrorCode, m.ErrorMessage, m.ReplayOf, m.TraceParent)
			if !m.BodyExpired {
				bargs = append(bargs, m.ID, j.hdr, bodyColumn(m), m.BlobKey)
			}
		}
		if _, err := tx.ExecContext(ctx, insertMessagesSQL[len(part)], margs...); err != nil {
			return err
		}
		if nb := len(bargs) / 4; nb > 0 {
			if _, err := tx.ExecContext(ctx, insertBodiesSQL[nb], bargs...); err != nil {
				return err
			}
		}
	}
	return nil
}

// runJob runs one job in its own savepoint; an error rolls back that job's
// writes alone.
func (s *Store) runJob(tx *wtx, j writeJob) error {
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, savepointSQL); err != nil {
		return classify(err)
	}
	err := j.fn(tx)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, rollbackToSQL); rerr != nil {
			return classify(rerr)
		}
	}
	if _, rerr := tx.ExecContext(ctx, releaseSQL); rerr != nil && err == nil {
		return classify(rerr)
	}
	if err != nil {
		return classify(err)
	}
	return nil
}

func insertMessage(ctx context.Context, tx *wtx, m *intake.Message, header string) error {
	if _, err := tx.ExecContext(ctx, insertMessageSQL,
		m.ID, m.OrgID, m.ConnectionID, m.EndpointID, m.Method, m.Query, m.Digest, ts(m.ReceivedAt), m.State, m.Attempt,
		m.MaxAttempts, ts(m.NextAttemptAt), ts(m.LeaseUntil), m.ProviderEventID, m.Outcome, m.ErrorCode, m.ErrorMessage,
		m.ReplayOf, m.TraceParent); err != nil {
		return err
	}
	if m.BodyExpired {
		return nil // a replay of a message whose body is gone: the record, no body
	}
	if m.BlobKey == "" {
		_, err := tx.ExecContext(ctx, insertBodySQL, m.ID, header, bodyColumn(m), "")
		return err
	}
	// A replay names its original's object only while a body still names
	// it: once none does, the sweeper may delete the object.
	res, err := tx.ExecContext(ctx, `INSERT INTO message_bodies (message_id, header, body, blob_key)
		SELECT ?1, ?2, x'', ?3 WHERE EXISTS (SELECT 1 FROM message_bodies WHERE blob_key = ?3)`, m.ID, header, m.BlobKey)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, notFound("message body", m.ReplayOf))
	}
	return nil
}

// bodyColumn is what the body column holds: the body, or nothing when
// its object holds it.
func bodyColumn(m *intake.Message) []byte {
	if m.Body == nil {
		return []byte{}
	}
	return m.Body
}

const (
	insertMessageCols = ` INTO messages
		(id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts,
		 next_attempt_at, lease_until, provider_event_id, outcome, error_code, error_message, replay_of, traceparent)
		VALUES `
	messageRow       = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertMessageSQL = "INSERT" + insertMessageCols + messageRow
	insertBodyCols   = ` INTO message_bodies (message_id, header, body, blob_key) VALUES `
	bodyRow          = `(?, ?, ?, ?)`
	insertBodySQL    = "INSERT" + insertBodyCols + bodyRow
)

// InsertReplay records an operator's replay of a message, with its audit
// entries, in a write of its own.
func (s *Store) InsertReplay(ctx context.Context, m *intake.Message, audit ...intake.AuditEntry) error {
	if err := intake.CheckReplay(m); err != nil {
		return err
	}
	hdr, err := json.Marshal(m.Header)
	if err != nil {
		return err
	}
	err = s.audited(ctx, audit, func(tx *wtx) error { return insertMessage(ctx, tx, m, string(hdr)) })
	if err == nil && m.State == intake.MessageQueued {
		s.hub.Notify(intake.TopicMessages)
	}
	return err
}

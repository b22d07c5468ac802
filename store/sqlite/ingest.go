package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/intakehq/intake"
)

// writeJob is one unit of work for the writer: it runs inside a savepoint
// of the shared transaction, so its failure undoes only its own writes.
type writeJob struct {
	ctx   context.Context
	fn    func(*wtx) error
	msg   *intake.Message // an ingest: inserted with the batch's other ingests
	after func()          // runs once the commit holding the job returned
	done  chan error
}

var errClosed = errors.New("sqlite: store closed")

// tx runs fn as part of the next group commit and returns once that commit
// is durable (or fn failed). Every write of the store goes through here:
// SQLite has one writer, and one fsync serves every job of a batch.
func (s *Store) tx(ctx context.Context, fn func(*wtx) error) error {
	return s.write1(ctx, fn, nil)
}

func (s *Store) write1(ctx context.Context, fn func(*wtx) error, after func()) error {
	job := writeJob{ctx: ctx, fn: fn, after: after, done: make(chan error, 1)}
	select {
	case s.jobs <- job:
	case <-s.stop:
		return unavailable(errClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
	// Wait for the commit even if ctx ends: a caller must never assume its
	// write was dropped, nor acknowledge one whose fate is unknown.
	return <-job.done
}

// Ingest commits a received message; concurrent calls share commits.
func (s *Store) Ingest(ctx context.Context, m *intake.Message) error {
	job := writeJob{ctx: ctx, msg: m, after: func() { s.hub.Notify(intake.TopicMessages) }, done: make(chan error, 1)}
	select {
	case s.jobs <- job:
	case <-s.stop:
		return unavailable(errClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-job.done
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
	drain:
		for len(batch) < s.batch {
			select {
			case j := <-s.jobs:
				batch = append(batch, j)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
	}
}

func (s *Store) failQueued() {
	for {
		select {
		case j := <-s.jobs:
			j.done <- unavailable(errClosed)
		default:
			return
		}
	}
}

func (s *Store) commitBatch(batch []writeJob) {
	ctx := context.Background()
	results := make([]error, len(batch))
	sqltx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		for _, j := range batch {
			j.done <- unavailable(err)
		}
		return
	}
	tx := &wtx{Tx: sqltx, stmts: s.stmts}
	s.insertIngests(tx, batch, results)
	for i, j := range batch {
		if j.msg == nil {
			results[i] = s.runJob(tx, j)
		}
	}
	if err := tx.Commit(); err != nil {
		for _, j := range batch {
			j.done <- unavailable(err)
		}
		return
	}
	for i, j := range batch {
		if results[i] == nil && j.after != nil {
			j.after()
		}
		j.done <- results[i]
	}
}

// insertIngests writes every ingest of the batch with one multi-row
// statement per table; if that fails, each alone in its own savepoint, so
// one bad row cannot fail its neighbours.
func (s *Store) insertIngests(tx *wtx, batch []writeJob, results []error) {
	var msgs []*intake.Message
	for _, j := range batch {
		if j.msg != nil {
			msgs = append(msgs, j.msg)
		}
	}
	if len(msgs) == 0 {
		return
	}
	if _, err := tx.Exec("SAVEPOINT ingest"); err == nil {
		err = insertMessages(tx, msgs)
		if err == nil {
			_, err = tx.Exec("RELEASE ingest")
			if err == nil {
				return
			}
		}
		tx.Exec("ROLLBACK TO ingest")
		tx.Exec("RELEASE ingest")
	}
	for i, j := range batch {
		if j.msg != nil {
			m := j.msg
			results[i] = s.runJob(tx, writeJob{fn: func(tx *wtx) error { return s.insertMessage(j.ctx, tx, m) }})
		}
	}
}

// insertMessages inserts messages and their bodies, a chunk of rows per
// statement (well inside SQLite's limit on bound parameters).
func insertMessages(tx *wtx, msgs []*intake.Message) error {
	const chunk = 100
	for start := 0; start < len(msgs); start += chunk {
		part := msgs[start:min(start+chunk, len(msgs))]
		var q, b strings.Builder
		q.WriteString(insertMessageHead)
		b.WriteString(insertBodyHead)
		margs := make([]any, 0, 17*len(part))
		bargs := make([]any, 0, 3*len(part))
		nb := 0
		for i, m := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(messageRow)
			margs = append(margs, m.ID, m.OrgID, m.ConnectionID, m.EndpointID, m.Method, m.Query, m.Digest, ts(m.ReceivedAt),
				m.State, m.Attempt, m.MaxAttempts, ts(m.NextAttemptAt), m.ProviderEventID, m.Outcome, m.ErrorCode,
				m.ErrorMessage, m.ReplayOf)
			if m.BodyExpired {
				continue
			}
			header, err := json.Marshal(m.Header)
			if err != nil {
				return err
			}
			if nb > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			bargs = append(bargs, m.ID, string(header), m.Body)
			nb++
		}
		if _, err := tx.Exec(q.String(), margs...); err != nil {
			return err
		}
		if nb > 0 {
			if _, err := tx.Exec(b.String(), bargs...); err != nil {
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
		return unavailable(err)
	}
	err := j.fn(tx)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, rollbackToSQL); rerr != nil {
			return unavailable(rerr)
		}
	}
	if _, rerr := tx.ExecContext(ctx, releaseSQL); rerr != nil && err == nil {
		return unavailable(rerr)
	}
	if err != nil {
		return unavailableUnlessCoded(err)
	}
	return nil
}

// unavailableUnlessCoded keeps domain errors (ESTALE, ENOTFOUND, …) as they
// are and marks everything else as a storage failure.
func unavailableUnlessCoded(err error) error {
	var ie *intake.Error
	if errors.As(err, &ie) {
		return err
	}
	return unavailable(err)
}

func (s *Store) insertMessage(ctx context.Context, tx *wtx, m *intake.Message) error {
	header, err := json.Marshal(m.Header)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, insertMessageSQL,
		m.ID, m.OrgID, m.ConnectionID, m.EndpointID, m.Method, m.Query, m.Digest, ts(m.ReceivedAt), m.State, m.Attempt,
		m.MaxAttempts, ts(m.NextAttemptAt), m.ProviderEventID, m.Outcome, m.ErrorCode, m.ErrorMessage, m.ReplayOf); err != nil {
		return err
	}
	if m.BodyExpired {
		return nil // a replay of a message whose body is gone: the record, no body
	}
	_, err = tx.ExecContext(ctx, insertBodySQL, m.ID, string(header), m.Body)
	return err
}

const (
	insertMessageHead = `INSERT INTO messages
		(id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts,
		 next_attempt_at, provider_event_id, outcome, error_code, error_message, replay_of)
		VALUES `
	messageRow       = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertMessageSQL = insertMessageHead + messageRow
	insertBodyHead   = `INSERT INTO message_bodies (message_id, header, body) VALUES `
	insertBodySQL    = insertBodyHead + `(?, ?, ?)`
)

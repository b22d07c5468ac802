package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/intakehq/intake"
)

type ingestRequest struct {
	m    *intake.Message
	done chan error
}

var errClosed = errors.New("sqlite: store closed")

// Ingest hands m to the committer and waits until the commit holding it
// returns. A lone request commits at once; requests that arrive while a
// commit is in flight share the next one.
func (s *Store) Ingest(ctx context.Context, m *intake.Message) error {
	req := ingestRequest{m: m, done: make(chan error, 1)}
	select {
	case s.ingest <- req:
	case <-s.stop:
		return unavailable(errClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
	// Wait for the commit even if ctx ends: the caller must not acknowledge
	// a message whose fate is unknown, and must not assume it was dropped.
	return <-req.done
}

func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]ingestRequest, 0, s.batch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.ingest:
			batch = append(batch, r)
		case <-s.stop:
			s.failQueued()
			return
		}
	drain:
		for len(batch) < s.batch {
			select {
			case r := <-s.ingest:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
		s.hub.Notify(intake.TopicMessages)
	}
}

func (s *Store) failQueued() {
	for {
		select {
		case r := <-s.ingest:
			r.done <- unavailable(errClosed)
		default:
			return
		}
	}
}

// commitBatch writes the batch in one transaction. If that fails, each
// request is committed alone, so one bad row cannot fail its neighbours.
func (s *Store) commitBatch(batch []ingestRequest) {
	ctx := context.Background()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, r := range batch {
			if err := insertMessage(ctx, tx, r.m); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			r.done <- unavailable(err)
		}
		return
	}
	for _, r := range batch {
		r.done <- unavailable(s.tx(ctx, func(tx *sql.Tx) error { return insertMessage(ctx, tx, r.m) }))
	}
}

func insertMessage(ctx context.Context, tx *sql.Tx, m *intake.Message) error {
	header, err := json.Marshal(m.Header)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages
		(id, org_id, connection_id, endpoint_id, method, query, digest, received_at, state, attempt, max_attempts,
		 next_attempt_at, provider_event_id, outcome, error_code, error_message, replay_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.OrgID, m.ConnectionID, m.EndpointID, m.Method, m.Query, m.Digest, ts(m.ReceivedAt), m.State, m.Attempt,
		m.MaxAttempts, ts(m.NextAttemptAt), m.ProviderEventID, m.Outcome, m.ErrorCode, m.ErrorMessage, m.ReplayOf); err != nil {
		return err
	}
	if m.BodyExpired {
		return nil // a replay of a message whose body is gone: the record, no body
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO message_bodies (message_id, header, body) VALUES (?, ?, ?)`, m.ID, string(header), m.Body)
	return err
}

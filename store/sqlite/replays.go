package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/intakehq/intake"
)

const replayJobColumns = `id, org_id, kind, endpoint_id, since, until, selection, total, done, cursor, error, created_at, updated_at,
	finished_at, lease_until, owner`

// CreateReplayJob records a new window replay or bulk job, unleased.
func (s *Store) CreateReplayJob(ctx context.Context, j intake.ReplayJob, audit ...intake.AuditEntry) error {
	sel, err := selectionColumn(j)
	if err != nil {
		return err
	}
	return s.audited(ctx, audit, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO replay_jobs (id, org_id, kind, endpoint_id, since, until, selection, total, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, j.ID, j.OrgID, jobKind(j.Kind), j.EndpointID, ts(j.Since), ts(j.Until), sel, j.Total,
			ts(j.CreatedAt), ts(j.UpdatedAt))
		return err
	})
}

// jobKind is the kind a job is stored as: a window replay's by default.
func jobKind(k intake.JobKind) intake.JobKind {
	if k == "" {
		return intake.JobWindow
	}
	return k
}

// selectionColumn is a job's selection as stored: JSON, or ” for a window
// replay's.
func selectionColumn(j intake.ReplayJob) (string, error) {
	if jobKind(j.Kind) == intake.JobWindow {
		return "", nil
	}
	b, err := json.Marshal(j.Selection)
	return string(b), err
}

// ReplayJob returns a window replay visible in sc.
func (s *Store) ReplayJob(ctx context.Context, sc intake.Scope, id string) (intake.ReplayJob, error) {
	j, err := scanReplayJob(s.reader(ctx).QueryRowContext(ctx, `SELECT `+replayJobColumns+` FROM replay_jobs
		WHERE id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return j, notFound("replay", id)
	}
	return j, err
}

// ClaimReplayJob leases, of the org whose jobs were saved least recently,
// the unfinished job saved least recently that no runner holds. The writer's transaction makes the read and the lease one step.
func (s *Store) ClaimReplayJob(ctx context.Context, now time.Time, lease time.Duration) (intake.ReplayJob, bool, error) {
	var j intake.ReplayJob
	var ok bool
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		j, err = scanReplayJob(tx.QueryRowContext(ctx, `UPDATE replay_jobs SET lease_until = ?1, owner = ?2
			WHERE id = (SELECT id FROM replay_jobs r WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until <= ?3)
			            ORDER BY (SELECT max(updated_at) FROM replay_jobs o WHERE o.org_id = r.org_id AND o.finished_at IS NULL),
			                     updated_at, id LIMIT 1)
			RETURNING `+replayJobColumns, ts(now.Add(lease)), intake.NewID(), ts(now)))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	return j, ok, err
}

// SaveReplayJob records a claimed job's progress while its owner holds it.
func (s *Store) SaveReplayJob(ctx context.Context, j intake.ReplayJob, now time.Time, lease time.Duration) error {
	if j.Owner == "" {
		// An unclaimed job's owner is '' too, but no runner holds it.
		return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
	}
	return s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE replay_jobs SET done = ?, cursor = ?, error = ?, finished_at = ?, updated_at = ?,
			lease_until = ? WHERE id = ? AND owner = ?`,
			j.Done, j.Cursor, j.Error, ts(j.FinishedAt), ts(now), ts(now.Add(lease)), j.ID, j.Owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
		}
		return nil
	})
}

// SaveJobBatch writes a bulk job's batch and its progress in one
// transaction, while j.Owner holds the job.
func (s *Store) SaveJobBatch(ctx context.Context, j intake.ReplayJob, b intake.JobBatch, now time.Time, lease time.Duration) (int, error) {
	if j.Owner == "" {
		return 0, intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
	}
	headers := make([]string, len(b.Replays))
	for i, m := range b.Replays {
		if m.OrgID != j.OrgID {
			return 0, intake.Errorf(intake.EINVALID, "a job's replays are of its own org")
		}
		if err := intake.CheckReplay(m); err != nil {
			return 0, err
		}
		hdr, err := json.Marshal(m.Header)
		if err != nil {
			return 0, err
		}
		headers[i] = string(hdr)
	}
	sc := intake.Scope{OrgID: j.OrgID}
	n, rerouted, queued := 0, false, false
	err := s.tx(ctx, func(tx *wtx) error {
		n, rerouted, queued = 0, false, false
		for _, id := range b.Reroute {
			done, err := intake.RerouteOutcome(rerouteEvent(ctx, tx, sc, id, now))
			if err != nil {
				return err
			}
			if done {
				n, rerouted = n+1, true
			}
		}
		for i, m := range b.Replays {
			if err := insertMessage(ctx, tx, m, headers[i]); err != nil {
				return err
			}
			n++
			queued = queued || m.State == intake.MessageQueued
		}
		res, err := tx.ExecContext(ctx, `UPDATE replay_jobs SET done = ?, cursor = ?, error = ?, finished_at = ?, updated_at = ?,
			lease_until = ? WHERE id = ? AND owner = ?`,
			j.Done+n, j.Cursor, j.Error, ts(j.FinishedAt), ts(now), ts(now.Add(lease)), j.ID, j.Owner)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			if err != nil {
				return err
			}
			return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if rerouted {
		s.hub.Notify(intake.TopicEvents)
	}
	if queued {
		s.hub.Notify(intake.TopicMessages)
	}
	return n, nil
}

func scanReplayJob(row *sql.Row) (intake.ReplayJob, error) {
	var j intake.ReplayJob
	var since, until, created, updated, finished, leased sql.NullInt64
	var sel string
	err := row.Scan(&j.ID, &j.OrgID, &j.Kind, &j.EndpointID, &since, &until, &sel, &j.Total, &j.Done, &j.Cursor, &j.Error,
		&created, &updated, &finished, &leased, &j.Owner)
	if err != nil {
		return j, err
	}
	j.Since, j.Until, j.CreatedAt, j.UpdatedAt = fromTS(since), fromTS(until), fromTS(created), fromTS(updated)
	j.FinishedAt, j.LeaseUntil = fromTS(finished), fromTS(leased)
	if sel != "" {
		if err := json.Unmarshal([]byte(sel), &j.Selection); err != nil {
			return j, fmt.Errorf("replay %s: its selection: %w", j.ID, err)
		}
	}
	return j, nil
}

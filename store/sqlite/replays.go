package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/intakehq/intake"
)

const replayJobColumns = `id, org_id, endpoint_id, since, until, total, done, cursor, error, created_at, updated_at,
	finished_at, lease_until, owner`

// CreateReplayJob records a new window replay, unleased.
func (s *Store) CreateReplayJob(ctx context.Context, j intake.ReplayJob, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO replay_jobs (id, org_id, endpoint_id, since, until, total, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, j.ID, j.OrgID, j.EndpointID, ts(j.Since), ts(j.Until), j.Total, ts(j.CreatedAt), ts(j.UpdatedAt))
		return err
	})
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

// ClaimReplayJob leases the oldest unfinished window replay that no runner
// holds. The writer's transaction makes the read and the lease one step.
func (s *Store) ClaimReplayJob(ctx context.Context, now time.Time, lease time.Duration) (intake.ReplayJob, bool, error) {
	var j intake.ReplayJob
	var ok bool
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		j, err = scanReplayJob(tx.QueryRowContext(ctx, `UPDATE replay_jobs SET lease_until = ?1, owner = ?2
			WHERE id = (SELECT id FROM replay_jobs WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until <= ?3)
			            ORDER BY created_at, id LIMIT 1)
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

func scanReplayJob(row *sql.Row) (intake.ReplayJob, error) {
	var j intake.ReplayJob
	var since, until, created, updated, finished, leased sql.NullInt64
	err := row.Scan(&j.ID, &j.OrgID, &j.EndpointID, &since, &until, &j.Total, &j.Done, &j.Cursor, &j.Error,
		&created, &updated, &finished, &leased, &j.Owner)
	j.Since, j.Until, j.CreatedAt, j.UpdatedAt = fromTS(since), fromTS(until), fromTS(created), fromTS(updated)
	j.FinishedAt, j.LeaseUntil = fromTS(finished), fromTS(leased)
	return j, err
}

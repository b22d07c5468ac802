package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

const replayJobColumns = `id, org_id, endpoint_id, since, until, total, done, cursor, error, created_at, updated_at,
	finished_at, lease_until, owner`

func scanReplayJob(row pgx.Row) (intake.ReplayJob, error) {
	var j intake.ReplayJob
	var since, until, created, updated, finished, leased *time.Time
	err := row.Scan(&j.ID, &j.OrgID, &j.EndpointID, &since, &until, &j.Total, &j.Done, &j.Cursor, &j.Error,
		&created, &updated, &finished, &leased, &j.Owner)
	j.Since, j.Until, j.CreatedAt, j.UpdatedAt = fromTS(since), fromTS(until), fromTS(created), fromTS(updated)
	j.FinishedAt, j.LeaseUntil = fromTS(finished), fromTS(leased)
	return j, err
}

// CreateReplayJob records a new window replay, unleased.
func (s *Store) CreateReplayJob(ctx context.Context, j intake.ReplayJob, audit ...intake.AuditEntry) error {
	if !validIDs(j.ID, j.OrgID, j.EndpointID) {
		return intake.Errorf(intake.EINVALID, "malformed replay job ids")
	}
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO replay_jobs (id, org_id, endpoint_id, since, until, total, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			j.ID, j.OrgID, j.EndpointID, ts(j.Since), ts(j.Until), j.Total, ts(j.CreatedAt), ts(j.UpdatedAt))
		return err
	})
}

// ReplayJob returns a window replay visible in sc.
func (s *Store) ReplayJob(ctx context.Context, sc intake.Scope, id string) (intake.ReplayJob, error) {
	var j intake.ReplayJob
	if !validIDs(id) {
		return j, notFound("replay", id)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+replayJobColumns+` FROM replay_jobs WHERE id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, id, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { j, err = scanReplayJob(row); return err })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return j, notFound("replay", id)
	}
	return j, err
}

// ClaimReplayJob leases the oldest unfinished window replay that no runner
// holds, to a new owner. A job another process is claiming or saving right
// now is skipped, not waited for, so two processes never claim the same one.
func (s *Store) ClaimReplayJob(ctx context.Context, now time.Time, lease time.Duration) (intake.ReplayJob, bool, error) {
	j, err := scanReplayJob(s.pool.QueryRow(ctx, `WITH next AS (
			SELECT id FROM replay_jobs
			 WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until <= $3)
			 ORDER BY created_at, id LIMIT 1
			   FOR UPDATE SKIP LOCKED
		)
		UPDATE replay_jobs r SET lease_until = $1, owner = $2
		  FROM next WHERE r.id = next.id
		RETURNING `+prefixed("r.", replayJobColumns), ts(now.Add(lease)), intake.NewID(), ts(now)))
	if errors.Is(err, pgx.ErrNoRows) {
		return intake.ReplayJob{}, false, nil
	}
	if err != nil {
		return intake.ReplayJob{}, false, classify(err)
	}
	return j, true, nil
}

// SaveReplayJob records a claimed job's progress and extends its lease,
// while j.Owner still holds it.
func (s *Store) SaveReplayJob(ctx context.Context, j intake.ReplayJob, now time.Time, lease time.Duration) error {
	if !validIDs(j.ID) {
		return notFound("replay", j.ID)
	}
	if j.Owner == "" {
		// An unclaimed job's owner is '' too, but no runner holds it.
		return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE replay_jobs SET done = $1, cursor = $2, error = $3, finished_at = $4, updated_at = $5,
			lease_until = $6 WHERE id = $7 AND owner = $8`,
			j.Done, text(j.Cursor), text(j.Error), ts(j.FinishedAt), ts(now), ts(now.Add(lease)), j.ID, text(j.Owner))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
		}
		return nil
	})
}

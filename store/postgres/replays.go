package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

const replayJobColumns = `id, org_id, kind, endpoint_id, since, until, selection, total, done, cursor, error, created_at, updated_at,
	finished_at, lease_until, owner`

func scanReplayJob(row pgx.Row) (intake.ReplayJob, error) {
	var j intake.ReplayJob
	var endpoint *string
	var since, until, created, updated, finished, leased *time.Time
	var sel string
	err := row.Scan(&j.ID, &j.OrgID, &j.Kind, &endpoint, &since, &until, &sel, &j.Total, &j.Done, &j.Cursor, &j.Error,
		&created, &updated, &finished, &leased, &j.Owner)
	if err != nil {
		return j, err
	}
	if endpoint != nil {
		j.EndpointID = *endpoint
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

// CreateReplayJob records a new window replay or bulk job, unleased.
func (s *Store) CreateReplayJob(ctx context.Context, j intake.ReplayJob, audit ...intake.AuditEntry) error {
	if !validIDs(j.ID, j.OrgID) || (j.EndpointID != "" && !validIDs(j.EndpointID)) {
		return intake.Errorf(intake.EINVALID, "malformed replay job ids")
	}
	kind, sel := j.Kind, ""
	if kind == "" {
		kind = intake.JobWindow
	}
	if kind != intake.JobWindow {
		b, err := json.Marshal(j.Selection)
		if err != nil {
			return err
		}
		sel = string(b)
	}
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO replay_jobs (id, org_id, kind, endpoint_id, since, until, selection, total, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			j.ID, j.OrgID, string(kind), nullID(j.EndpointID), ts(j.Since), ts(j.Until), sel, j.Total, ts(j.CreatedAt), ts(j.UpdatedAt))
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

// ClaimReplayJob leases, of the org whose jobs were saved least recently,
// the unfinished job saved least recently that no runner holds, to a new
// owner. A job another process is claiming or saving right
// now is skipped, not waited for, so two processes never claim the same one.
func (s *Store) ClaimReplayJob(ctx context.Context, now time.Time, lease time.Duration) (intake.ReplayJob, bool, error) {
	j, err := scanReplayJob(s.pool.QueryRow(ctx, `WITH next AS (
			SELECT id FROM replay_jobs r
			 WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until <= coalesce($3::timestamptz, statement_timestamp()))
			 ORDER BY (SELECT max(o.updated_at) FROM replay_jobs o WHERE o.org_id = r.org_id AND o.finished_at IS NULL),
			          updated_at, id LIMIT 1
			   FOR UPDATE SKIP LOCKED
		)
		UPDATE replay_jobs r SET lease_until = coalesce($3::timestamptz, statement_timestamp()) + $1::bigint * interval '1 microsecond',
		       owner = $2
		  FROM next WHERE r.id = next.id
		RETURNING `+prefixed("r.", replayJobColumns), micros(lease), intake.NewID(), s.clockNow(now)))
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
			lease_until = coalesce($9::timestamptz, statement_timestamp()) + $6::bigint * interval '1 microsecond' WHERE id = $7 AND owner = $8`,
			j.Done, text(j.Cursor), text(j.Error), ts(j.FinishedAt), ts(now), micros(lease), j.ID, text(j.Owner), s.clockNow(now))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
		}
		return nil
	})
}

// SaveJobBatch writes a bulk job's batch and its progress in one
// transaction in the job's org, while j.Owner holds the job.
func (s *Store) SaveJobBatch(ctx context.Context, j intake.ReplayJob, b intake.JobBatch, now time.Time, lease time.Duration) (int, error) {
	if !validIDs(j.ID, j.OrgID) || !validIDs(b.Reroute...) {
		return 0, intake.Errorf(intake.EINVALID, "malformed job ids")
	}
	if j.Owner == "" {
		return 0, intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
	}
	for _, m := range b.Replays {
		if m.OrgID != j.OrgID {
			return 0, intake.Errorf(intake.EINVALID, "a job's replays are of its own org")
		}
		if err := intake.CheckReplay(m); err != nil {
			return 0, err
		}
	}
	sc := intake.Scope{OrgID: j.OrgID}
	n, rerouted := 0, false
	err := s.scopedTx(ctx, sc, func(tx pgx.Tx) error {
		n, rerouted = 0, false
		// The job's row is held first: a claim skips it, and a runner that
		// lost it writes nothing.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM replay_jobs WHERE id = $1 AND owner = $2 FOR UPDATE`, j.ID, text(j.Owner)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return intake.Errorf(intake.ESTALE, "replay %s is held by another runner", j.ID)
		}
		if err != nil {
			return err
		}
		for _, id := range b.Reroute {
			done, err := intake.RerouteOutcome(rerouteEvent(ctx, tx, sc, id, s.clockNow(now)))
			if err != nil {
				return err
			}
			if done {
				n, rerouted = n+1, true
			}
		}
		if rerouted {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channels[intake.TopicEvents], s.instance); err != nil {
				return err
			}
		}
		if err := s.insertReplays(ctx, tx, b.Replays); err != nil {
			return err
		}
		n += len(b.Replays)
		_, err = tx.Exec(ctx, `UPDATE replay_jobs SET done = $1, cursor = $2, error = $3, finished_at = $4, updated_at = $5,
			lease_until = coalesce($8::timestamptz, statement_timestamp()) + $6::bigint * interval '1 microsecond' WHERE id = $7`,
			j.Done+n, text(j.Cursor), text(j.Error), ts(j.FinishedAt), ts(now), micros(lease), j.ID, s.clockNow(now))
		return err
	})
	if err != nil {
		return 0, err
	}
	if rerouted {
		s.hub.Notify(intake.TopicEvents)
	}
	if len(b.Replays) > 0 {
		s.hub.Notify(intake.TopicMessages)
	}
	return n, nil
}

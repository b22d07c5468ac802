-- +goose Up
-- A bulk replay or re-route of more rows than a request takes at once runs
-- as a job beside window replays: its kind, and the search it works
-- through; it has no endpoint or window of its own. Jobs take turns: the
-- claim takes the one saved least recently.
ALTER TABLE replay_jobs
    ADD COLUMN kind text NOT NULL DEFAULT 'window',
    ADD COLUMN selection text NOT NULL DEFAULT '',
    ALTER COLUMN endpoint_id DROP NOT NULL,
    ALTER COLUMN since DROP NOT NULL,
    ALTER COLUMN until DROP NOT NULL;
DROP INDEX replay_jobs_unfinished;
CREATE INDEX replay_jobs_unfinished ON replay_jobs (updated_at, id) WHERE finished_at IS NULL;

-- +goose Down
DELETE FROM replay_jobs WHERE kind <> 'window';
DROP INDEX replay_jobs_unfinished;
CREATE INDEX replay_jobs_unfinished ON replay_jobs (created_at, id) WHERE finished_at IS NULL;
ALTER TABLE replay_jobs
    DROP COLUMN kind,
    DROP COLUMN selection,
    ALTER COLUMN endpoint_id SET NOT NULL,
    ALTER COLUMN since SET NOT NULL,
    ALTER COLUMN until SET NOT NULL;

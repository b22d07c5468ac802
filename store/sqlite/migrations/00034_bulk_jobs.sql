-- +goose Up
-- A bulk replay or re-route of more rows than a request takes at once runs
-- as a job beside window replays: its kind, and the search it works
-- through; it has no endpoint or window of its own, so the table is made
-- again with those columns optional. Jobs take turns: the claim takes the
-- one saved least recently.
CREATE TABLE replay_jobs_new (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'window',
    endpoint_id TEXT NOT NULL DEFAULT '',
    since       INTEGER,
    until       INTEGER,
    selection   TEXT NOT NULL DEFAULT '',
    total       INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    cursor      TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER,
    lease_until INTEGER,
    owner       TEXT NOT NULL DEFAULT ''
);
INSERT INTO replay_jobs_new (id, org_id, endpoint_id, since, until, total, done, cursor, error, created_at, updated_at,
    finished_at, lease_until, owner)
SELECT id, org_id, endpoint_id, since, until, total, done, cursor, error, created_at, updated_at, finished_at, lease_until, owner
  FROM replay_jobs;
DROP TABLE replay_jobs;
ALTER TABLE replay_jobs_new RENAME TO replay_jobs;
CREATE INDEX replay_jobs_open ON replay_jobs (updated_at, id) WHERE finished_at IS NULL;

-- +goose Down
DELETE FROM replay_jobs WHERE kind <> 'window';
CREATE TABLE replay_jobs_old (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    since       INTEGER NOT NULL,
    until       INTEGER NOT NULL,
    total       INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    cursor      TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER,
    lease_until INTEGER,
    owner       TEXT NOT NULL DEFAULT ''
);
INSERT INTO replay_jobs_old SELECT id, org_id, endpoint_id, since, until, total, done, cursor, error, created_at, updated_at,
    finished_at, lease_until, owner FROM replay_jobs;
DROP TABLE replay_jobs;
ALTER TABLE replay_jobs_old RENAME TO replay_jobs;
CREATE INDEX replay_jobs_open ON replay_jobs (created_at, id) WHERE finished_at IS NULL;

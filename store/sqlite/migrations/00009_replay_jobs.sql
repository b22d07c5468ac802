-- +goose Up
-- Window replays, so any process reports one's progress and another takes
-- it over should the process running it stop.
CREATE TABLE replay_jobs (
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
CREATE INDEX replay_jobs_open ON replay_jobs (created_at, id) WHERE finished_at IS NULL;

-- +goose Down
DROP TABLE replay_jobs;

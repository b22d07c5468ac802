-- +goose Up
-- A window replay lives here so any process reports its progress and,
-- should the process running it stop, another takes it over once its lease
-- ends and goes on from cursor.
CREATE TABLE replay_jobs (
    id          uuid PRIMARY KEY,
    org_id      uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    since       timestamptz NOT NULL,
    until       timestamptz NOT NULL,
    total       integer NOT NULL,
    done        integer NOT NULL DEFAULT 0,
    cursor      text NOT NULL DEFAULT '',
    error       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    finished_at timestamptz,
    lease_until timestamptz,
    owner       text NOT NULL DEFAULT ''
);
-- The claim takes the oldest unfinished job; finished ones, nearly all of
-- them, stay out of this index.
CREATE INDEX replay_jobs_unfinished ON replay_jobs (created_at, id) WHERE finished_at IS NULL;

GRANT SELECT, INSERT, UPDATE, DELETE ON replay_jobs TO intake_tenant;
ALTER TABLE replay_jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY replay_jobs_tenant ON replay_jobs TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE replay_jobs;

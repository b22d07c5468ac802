-- +goose Up
-- Console sessions live here so every process accepts them and a sign-out
-- ends them everywhere. id_hash is the SHA-256 of the cookie value, which
-- is never stored; key_hash, of the credential signed in with.
CREATE TABLE console_sessions (
    id_hash    bytea PRIMARY KEY,
    org_id     uuid, -- NULL for staff
    key_hash   bytea NOT NULL,
    actor      text NOT NULL,
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
-- The sweeper deletes expired sessions oldest first.
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON console_sessions TO intake_tenant;
ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY console_sessions_tenant ON console_sessions TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- Work that is not settled yet, and what went wrong: few rows whatever the
-- table's size, so Stats and the overview count them exactly and cheaply.
CREATE INDEX messages_live ON messages (org_id, state, received_at) WHERE state IN ('queued', 'processing', 'failed');
CREATE INDEX messages_dead ON messages (org_id) WHERE state = 'dead';
CREATE INDEX events_counted_exactly ON events (org_id, provider, state) WHERE state IN ('pending', 'retrying', 'dead', 'no_consumer');
-- Stats estimates the many settled events per provider and state from
-- these statistics, which ANALYZE keeps.
CREATE STATISTICS events_provider_state (mcv) ON provider, state FROM events;

-- +goose Down
DROP STATISTICS events_provider_state;
DROP INDEX events_counted_exactly;
DROP INDEX messages_dead;
DROP INDEX messages_live;
DROP TABLE console_sessions;

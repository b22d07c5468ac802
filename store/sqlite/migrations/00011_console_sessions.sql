-- +goose Up
-- Console sessions live here so every process accepts them and a sign-out
-- ends them everywhere. id_hash is the SHA-256 of the cookie value, which
-- is never stored; key_hash, of the credential signed in with.
CREATE TABLE console_sessions (
    id_hash    BLOB PRIMARY KEY,
    org_id     TEXT NOT NULL DEFAULT '', -- '' for staff
    key_hash   BLOB NOT NULL,
    actor      TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;
-- The sweeper deletes expired sessions oldest first.
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- The overview counts each (state, hour) of a window's originals as one
-- range of this index, without reading rows or sorting them, and the
-- messages not settled yet, few whatever the table's size, as the ranges of
-- their states.
CREATE INDEX messages_state_received ON messages (state, received_at, org_id, replay_of);
-- Events that are not settled yet or need an operator.
CREATE INDEX events_open ON events (org_id, state) WHERE state IN ('pending', 'retrying', 'dead', 'no_consumer');

-- +goose Down
DROP INDEX events_open;
DROP INDEX messages_state_received;
DROP TABLE console_sessions;

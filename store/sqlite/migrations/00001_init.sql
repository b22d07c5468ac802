-- +goose Up
CREATE TABLE orgs (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    prefix     TEXT NOT NULL,
    key_hash   BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX api_keys_org ON api_keys (org_id, id);

CREATE TABLE connections (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    provider       TEXT NOT NULL,
    name           TEXT NOT NULL,
    sealed_secrets BLOB,
    config         TEXT,
    created_at     INTEGER NOT NULL
);
CREATE INDEX connections_org ON connections (org_id, id);

CREATE TABLE endpoints (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    connection_id  TEXT NOT NULL REFERENCES connections (id),
    token_hash     BLOB NOT NULL UNIQUE,
    sealed_token   BLOB,
    enabled        INTEGER NOT NULL,
    max_body_bytes INTEGER NOT NULL,
    rate_per_sec   REAL NOT NULL,
    burst          INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX endpoints_org ON endpoints (org_id, id);

-- A message row is the work item: workers claim it directly.
CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL,
    connection_id     TEXT NOT NULL,
    endpoint_id       TEXT NOT NULL,
    method            TEXT NOT NULL,
    query             TEXT NOT NULL,
    digest            TEXT NOT NULL,
    received_at       INTEGER NOT NULL,
    state             TEXT NOT NULL,
    attempt           INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL,
    next_attempt_at   INTEGER,
    lease_until       INTEGER,
    provider_event_id TEXT NOT NULL DEFAULT '',
    outcome           TEXT NOT NULL DEFAULT '',
    error_code        TEXT NOT NULL DEFAULT '',
    error_message     TEXT NOT NULL DEFAULT '',
    replay_of         TEXT NOT NULL DEFAULT '',
    settled_at        INTEGER
);
CREATE INDEX messages_due ON messages (next_attempt_at) WHERE state IN ('queued', 'failed');
CREATE INDEX messages_leased ON messages (lease_until) WHERE state = 'processing';
CREATE INDEX messages_org ON messages (org_id, id);
CREATE INDEX messages_endpoint ON messages (endpoint_id, id);

-- Bodies live apart so the sweeper can drop them after the replay window
-- while the message's metadata stays.
CREATE TABLE message_bodies (
    message_id TEXT PRIMARY KEY,
    header     TEXT NOT NULL,
    body       BLOB NOT NULL
);

CREATE TABLE message_identities (
    connection_id TEXT NOT NULL,
    key           TEXT NOT NULL,
    digest        TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    expires_at    INTEGER,
    PRIMARY KEY (connection_id, key)
);

CREATE TABLE events (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL,
    connection_id     TEXT NOT NULL,
    message_id        TEXT NOT NULL,
    provider          TEXT NOT NULL,
    type              TEXT NOT NULL,
    kind              TEXT NOT NULL,
    provider_event_id TEXT NOT NULL,
    occurred_at       INTEGER NOT NULL,
    received_at       INTEGER NOT NULL,
    subject_app       TEXT NOT NULL DEFAULT '',
    subject_record_id TEXT NOT NULL DEFAULT '',
    data              TEXT NOT NULL,
    data_truncated    INTEGER NOT NULL,
    object_ids        TEXT NOT NULL,
    state             TEXT NOT NULL,
    attempt           INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL,
    next_attempt_at   INTEGER,
    lease_until       INTEGER,
    replay            INTEGER NOT NULL,
    replay_of         TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
);
-- One event per provider event: an item re-sent in another batch is not
-- made into a second event. Replays are new events by design.
CREATE UNIQUE INDEX events_provider_event ON events (connection_id, provider_event_id)
    WHERE replay = 0 AND provider_event_id <> '';
CREATE INDEX events_due ON events (next_attempt_at) WHERE state IN ('pending', 'retrying');
CREATE INDEX events_org ON events (org_id, id);
CREATE INDEX events_message ON events (message_id);

-- +goose Down
DROP TABLE events;
DROP TABLE message_identities;
DROP TABLE message_bodies;
DROP TABLE messages;
DROP TABLE endpoints;
DROP TABLE connections;
DROP TABLE api_keys;
DROP TABLE orgs;

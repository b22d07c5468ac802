-- +goose Up
CREATE TABLE consumers (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    name          TEXT NOT NULL,
    app           TEXT NOT NULL,
    url           TEXT NOT NULL,
    event_types   TEXT NOT NULL,
    completion    INTEGER NOT NULL,
    enabled       INTEGER NOT NULL,
    sealed_secret BLOB NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX consumers_org ON consumers (org_id, id);

CREATE TABLE subject_links (
    id                 TEXT PRIMARY KEY,
    org_id             TEXT NOT NULL,
    connection_id      TEXT NOT NULL REFERENCES connections (id),
    provider_object_id TEXT NOT NULL,
    app                TEXT NOT NULL,
    record_id          TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    UNIQUE (connection_id, provider_object_id)
);

CREATE TABLE deliveries (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    latency_us  INTEGER NOT NULL,
    error       TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX deliveries_event ON deliveries (event_id, id);

-- Events are claimed by due time among the unleased; the old partial index
-- is replaced by one that also covers the lease.
DROP INDEX events_due;
CREATE INDEX events_due ON events (next_attempt_at, lease_until) WHERE state IN ('pending', 'retrying');

-- +goose Down
DROP INDEX events_due;
CREATE INDEX events_due ON events (next_attempt_at) WHERE state IN ('pending', 'retrying');
DROP TABLE deliveries;
DROP TABLE subject_links;
DROP TABLE consumers;

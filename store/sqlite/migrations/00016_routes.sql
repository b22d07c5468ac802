-- +goose Up
-- Consumer controls (DESIGN §9): pause, rate, concurrency, ordering, the
-- consumer's own retry schedule and its circuit breaker. 0 or '' is "none"
-- or "the default".
ALTER TABLE consumers ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN rate_per_sec REAL NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN ordering TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN retry_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN retry_base_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN breaker_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN auto_disable_after_s INTEGER NOT NULL DEFAULT 0;

-- A consumer's delivery state shared by every process: rate tokens and the
-- circuit breaker. Claims lock it, so limits hold across processes.
CREATE TABLE consumer_lanes (
    consumer_id    TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    tokens         REAL NOT NULL DEFAULT 0,
    refilled_at    INTEGER,
    failures       INTEGER NOT NULL DEFAULT 0,
    failing_since  INTEGER,
    tripped        INTEGER NOT NULL DEFAULT 0,
    probe_at       INTEGER,
    probe_every_ms INTEGER NOT NULL DEFAULT 0,
    claimed_at     INTEGER -- consumers take turns by this
);
INSERT INTO consumer_lanes (consumer_id, org_id) SELECT id, org_id FROM consumers;

-- An event's way to one consumer: the delivery queue. A consumer advances
-- on its own routes only.
CREATE TABLE routes (
    event_id    TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    org_id      TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 0,
    next_at     INTEGER NOT NULL,
    lease_until INTEGER,
    order_key   TEXT NOT NULL DEFAULT '',
    order_at    INTEGER NOT NULL,
    last_error  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (event_id, consumer_id)
);
CREATE INDEX routes_due ON routes (consumer_id, next_at) WHERE state = 'waiting';
CREATE INDEX routes_in_flight ON routes (consumer_id, lease_until) WHERE state = 'waiting' AND lease_until IS NOT NULL;
CREATE INDEX routes_order ON routes (consumer_id, order_key, order_at, event_id) WHERE state = 'waiting' AND order_key <> '';

-- Operational notifications: written in the transaction of the change they
-- report, sent (grouped) by the notifier.
CREATE TABLE notices (
    id      TEXT PRIMARY KEY,
    org_id  TEXT NOT NULL,
    topic   TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail  TEXT NOT NULL,
    at      INTEGER NOT NULL,
    sent_at INTEGER
);
CREATE INDEX notices_unsent ON notices (at) WHERE sent_at IS NULL;
CREATE INDEX notices_group ON notices (org_id, topic, subject, at);

-- Where an org's notifications go. The Slack URL is a credential: sealed.
CREATE TABLE notification_settings (
    org_id             TEXT PRIMARY KEY REFERENCES orgs (id),
    url                TEXT NOT NULL DEFAULT '',
    sealed_slack_url   BLOB,
    topics             TEXT NOT NULL, -- a JSON array
    sealed_secret      BLOB NOT NULL,
    updated_at         INTEGER NOT NULL
);

-- Health reads a consumer's recent deliveries.
CREATE INDEX deliveries_consumer_at ON deliveries (consumer_id, at);

-- +goose Down
DROP INDEX deliveries_consumer_at;
DROP TABLE notification_settings;
DROP TABLE notices;
DROP TABLE routes;
DROP TABLE consumer_lanes;
ALTER TABLE consumers DROP COLUMN auto_disable_after_s;
ALTER TABLE consumers DROP COLUMN breaker_failures;
ALTER TABLE consumers DROP COLUMN retry_base_ms;
ALTER TABLE consumers DROP COLUMN retry_attempts;
ALTER TABLE consumers DROP COLUMN ordering;
ALTER TABLE consumers DROP COLUMN max_in_flight;
ALTER TABLE consumers DROP COLUMN rate_per_sec;
ALTER TABLE consumers DROP COLUMN paused;

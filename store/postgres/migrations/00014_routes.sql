-- +goose Up
-- Consumer controls (DESIGN §9): pause, rate, concurrency, ordering, the
-- consumer's own retry schedule and its circuit breaker. 0 or '' is "none"
-- or "the default".
ALTER TABLE consumers ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE consumers ADD COLUMN rate_per_sec double precision NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN max_in_flight integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN ordering text NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN retry_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN retry_base_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN breaker_failures integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN auto_disable_after_s bigint NOT NULL DEFAULT 0;

-- A consumer's delivery state shared by every process: rate tokens and the
-- circuit breaker. Claims lock it, so limits hold across processes.
CREATE TABLE consumer_lanes (
    consumer_id    uuid PRIMARY KEY,
    org_id         uuid NOT NULL,
    tokens         double precision NOT NULL DEFAULT 0,
    refilled_at    timestamptz,
    failures       integer NOT NULL DEFAULT 0,
    failing_since  timestamptz,
    tripped        boolean NOT NULL DEFAULT false,
    probe_at       timestamptz,
    probe_every_ms bigint NOT NULL DEFAULT 0,
    claimed_at     timestamptz -- consumers take turns by this
);
INSERT INTO consumer_lanes (consumer_id, org_id) SELECT id, org_id FROM consumers;

-- An event's way to one consumer: the delivery queue. A consumer advances
-- on its own routes only.
CREATE TABLE routes (
    event_id    uuid NOT NULL,
    consumer_id uuid NOT NULL,
    org_id      uuid NOT NULL,
    state       text NOT NULL,
    attempt     integer NOT NULL DEFAULT 0,
    next_at     timestamptz NOT NULL,
    lease_until timestamptz,
    order_key   text NOT NULL DEFAULT '',
    order_at    timestamptz NOT NULL,
    last_error  text NOT NULL DEFAULT '',
    PRIMARY KEY (event_id, consumer_id)
);
CREATE INDEX routes_due ON routes (consumer_id, next_at) WHERE state = 'waiting';
CREATE INDEX routes_in_flight ON routes (consumer_id, lease_until) WHERE state = 'waiting' AND lease_until IS NOT NULL;
CREATE INDEX routes_order ON routes (consumer_id, order_key, order_at, event_id) WHERE state = 'waiting' AND order_key <> '';

-- Operational notifications: written in the transaction of the change they
-- report, sent (grouped) by the notifier.
CREATE TABLE notices (
    id      uuid PRIMARY KEY,
    org_id  uuid NOT NULL,
    topic   text NOT NULL,
    subject text NOT NULL,
    detail  text NOT NULL,
    at      timestamptz NOT NULL,
    sent_at timestamptz
);
CREATE INDEX notices_unsent ON notices (at) WHERE sent_at IS NULL;
CREATE INDEX notices_group ON notices (org_id, topic, subject, at);

-- Where an org's notifications go. The Slack URL is a credential: sealed.
CREATE TABLE notification_settings (
    org_id             uuid PRIMARY KEY REFERENCES orgs (id),
    url                text NOT NULL DEFAULT '',
    sealed_slack_url   bytea,
    topics             text[] NOT NULL,
    sealed_secret      bytea NOT NULL,
    updated_at         timestamptz NOT NULL
);

-- Health reads a consumer's recent deliveries.
CREATE INDEX deliveries_consumer_at ON deliveries (consumer_id, at);

GRANT SELECT, INSERT, UPDATE, DELETE ON consumer_lanes, routes, notices, notification_settings TO intake_tenant;
ALTER TABLE consumer_lanes ENABLE ROW LEVEL SECURITY;
ALTER TABLE routes ENABLE ROW LEVEL SECURITY;
ALTER TABLE notices ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY consumer_lanes_tenant ON consumer_lanes TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY routes_tenant ON routes TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY notices_tenant ON notices TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY notification_settings_tenant ON notification_settings TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

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

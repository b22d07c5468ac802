-- +goose Up
CREATE TABLE orgs (
    id           uuid PRIMARY KEY,
    name         text NOT NULL,
    api_key_hash bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL
);

CREATE TABLE connections (
    id             uuid PRIMARY KEY,
    org_id         uuid NOT NULL REFERENCES orgs (id),
    provider       text NOT NULL,
    name           text NOT NULL,
    sealed_secrets bytea,
    config         jsonb,
    created_at     timestamptz NOT NULL
);
CREATE INDEX connections_org ON connections (org_id, id);

CREATE TABLE endpoints (
    id             uuid PRIMARY KEY,
    org_id         uuid NOT NULL REFERENCES orgs (id),
    connection_id  uuid NOT NULL REFERENCES connections (id),
    token_hash     bytea NOT NULL UNIQUE,
    sealed_token   bytea,
    enabled        boolean NOT NULL,
    max_body_bytes bigint NOT NULL,
    rate_per_sec   double precision NOT NULL,
    burst          integer NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX endpoints_org ON endpoints (org_id, id);

-- A message row is the work item: workers claim it directly.
CREATE TABLE messages (
    id                uuid PRIMARY KEY,
    org_id            uuid NOT NULL,
    connection_id     uuid NOT NULL,
    endpoint_id       uuid NOT NULL,
    method            text NOT NULL,
    query             text NOT NULL,
    digest            text NOT NULL,
    received_at       timestamptz NOT NULL,
    state             text NOT NULL,
    attempt           integer NOT NULL,
    max_attempts      integer NOT NULL,
    next_attempt_at   timestamptz,
    lease_until       timestamptz,
    provider_event_id text NOT NULL DEFAULT '',
    outcome           text NOT NULL DEFAULT '',
    error_code        text NOT NULL DEFAULT '',
    error_message     text NOT NULL DEFAULT '',
    replay_of         uuid,
    settled_at        timestamptz
);
-- The claim query names these states literally so these partial indexes
-- serve it.
CREATE INDEX messages_due ON messages (next_attempt_at) WHERE state IN ('queued', 'failed');
CREATE INDEX messages_leased ON messages (lease_until) WHERE state = 'processing';
CREATE INDEX messages_org ON messages (org_id, id);
CREATE INDEX messages_endpoint ON messages (endpoint_id, id);
-- Retention and replay windows select messages by when they arrived.
CREATE INDEX messages_received ON messages (received_at);

-- Bodies live apart so the sweeper can drop them after the replay window
-- while the message's metadata stays. org_id is the message's, for
-- row-level security.
CREATE TABLE message_bodies (
    message_id uuid PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    org_id     uuid NOT NULL,
    header     jsonb NOT NULL,
    body       bytea NOT NULL
);

CREATE TABLE message_identities (
    connection_id uuid NOT NULL,
    key           text NOT NULL,
    org_id        uuid NOT NULL,
    digest        text NOT NULL,
    event_type    text NOT NULL,
    message_id    uuid NOT NULL,
    expires_at    timestamptz,
    PRIMARY KEY (connection_id, key)
);
-- Retention deletes a message's identities with it.
CREATE INDEX message_identities_message ON message_identities (message_id);

CREATE TABLE events (
    id                uuid PRIMARY KEY,
    org_id            uuid NOT NULL,
    connection_id     uuid NOT NULL,
    message_id        uuid NOT NULL,
    provider          text NOT NULL,
    type              text NOT NULL,
    kind              text NOT NULL,
    provider_event_id text NOT NULL,
    occurred_at       timestamptz NOT NULL,
    received_at       timestamptz NOT NULL,
    subject_app       text NOT NULL DEFAULT '',
    subject_record_id text NOT NULL DEFAULT '',
    -- json, not jsonb: consumers get the adapter's bytes as they were.
    data              json NOT NULL,
    data_truncated    boolean NOT NULL,
    object_ids        text[] NOT NULL,
    state             text NOT NULL,
    attempt           integer NOT NULL,
    max_attempts      integer NOT NULL,
    next_attempt_at   timestamptz,
    lease_until       timestamptz,
    replay            boolean NOT NULL,
    replay_of         uuid,
    created_at        timestamptz NOT NULL
);
-- One event per provider event: an item re-sent in another batch is not
-- made into a second event. Replays are new events by design.
CREATE UNIQUE INDEX events_provider_event ON events (connection_id, provider_event_id)
    WHERE NOT replay AND provider_event_id <> '';
CREATE INDEX events_due ON events (next_attempt_at, lease_until) WHERE state IN ('pending', 'retrying');
CREATE INDEX events_org ON events (org_id, id);
CREATE INDEX events_message ON events (message_id);

CREATE TABLE consumers (
    id            uuid PRIMARY KEY,
    org_id        uuid NOT NULL REFERENCES orgs (id),
    name          text NOT NULL,
    app           text NOT NULL,
    url           text NOT NULL,
    event_types   text[] NOT NULL,
    completion    boolean NOT NULL,
    enabled       boolean NOT NULL,
    sealed_secret bytea NOT NULL,
    created_at    timestamptz NOT NULL
);
CREATE INDEX consumers_org ON consumers (org_id, id);

CREATE TABLE subject_links (
    id                 uuid PRIMARY KEY,
    org_id             uuid NOT NULL,
    connection_id      uuid NOT NULL REFERENCES connections (id),
    provider_object_id text NOT NULL,
    app                text NOT NULL,
    record_id          text NOT NULL,
    created_at         timestamptz NOT NULL,
    UNIQUE (connection_id, provider_object_id)
);

CREATE TABLE deliveries (
    id          uuid PRIMARY KEY,
    org_id      uuid NOT NULL,
    event_id    uuid NOT NULL,
    consumer_id uuid NOT NULL,
    attempt     integer NOT NULL,
    outcome     text NOT NULL,
    status_code integer NOT NULL,
    latency_us  bigint NOT NULL,
    error       text NOT NULL,
    at          timestamptz NOT NULL
);
CREATE INDEX deliveries_event ON deliveries (event_id, id);

-- Row-level security. An org's API requests run as intake_tenant with
-- intake.org_id set for their transaction, and see only that org's rows
-- whatever their SQL says. Staff views and the workers run as the role that
-- owns these tables, which row-level security does not bind. Roles belong to
-- the whole cluster, so several intake databases share this one; it logs in
-- nowhere and holds no rows of its own.
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'intake_tenant') THEN
        CREATE ROLE intake_tenant NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- another database's migration created it at the same moment
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'intake_tenant', 'MEMBER') THEN
        EXECUTE format('GRANT intake_tenant TO %I', current_user);
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO intake_tenant', current_schema());
END
$$;
-- +goose StatementEnd

GRANT SELECT, INSERT, UPDATE, DELETE
    ON orgs, connections, endpoints, messages, message_bodies, message_identities, events, consumers, subject_links, deliveries
    TO intake_tenant;

ALTER TABLE orgs ENABLE ROW LEVEL SECURITY;
ALTER TABLE connections ENABLE ROW LEVEL SECURITY;
ALTER TABLE endpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_bodies ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE consumers ENABLE ROW LEVEL SECURITY;
ALTER TABLE subject_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE deliveries ENABLE ROW LEVEL SECURITY;

-- NULLIF: outside a scoped transaction the setting is unset (NULL) or, on a
-- pooled connection that had it, reset to ''; either matches no row.
CREATE POLICY orgs_tenant ON orgs TO intake_tenant
    USING (id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY connections_tenant ON connections TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY endpoints_tenant ON endpoints TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY messages_tenant ON messages TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY message_bodies_tenant ON message_bodies TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY message_identities_tenant ON message_identities TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY events_tenant ON events TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY consumers_tenant ON consumers TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY subject_links_tenant ON subject_links TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY deliveries_tenant ON deliveries TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE deliveries;
DROP TABLE subject_links;
DROP TABLE consumers;
DROP TABLE events;
DROP TABLE message_identities;
DROP TABLE message_bodies;
DROP TABLE messages;
DROP TABLE endpoints;
DROP TABLE connections;
DROP TABLE orgs;
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM intake_tenant', current_schema());
END
$$;
-- +goose StatementEnd

-- +goose Up
-- Issues (DESIGN §20): the failures that share one cause in one org, one
-- row per (org, kind, subject, cause), written in the transaction of the
-- settle that saw the failure. The subject is a consumer (delivery, rule,
-- backlog) or a connection (request).
CREATE TABLE issues (
    id                uuid PRIMARY KEY,
    org_id            uuid NOT NULL,
    kind              text NOT NULL,
    status            text NOT NULL,
    consumer_id       uuid,
    connection_id     uuid,
    subject_name      text NOT NULL DEFAULT '',
    cause             text NOT NULL,
    count             bigint NOT NULL DEFAULT 0,
    events            bigint NOT NULL DEFAULT 0,
    first_seen_at     timestamptz NOT NULL,
    last_seen_at      timestamptz NOT NULL,
    opened_at         timestamptz NOT NULL,
    acknowledged_at   timestamptz,
    resolved_at       timestamptz,
    last_error        text NOT NULL DEFAULT '',
    sample_event_id   uuid,
    sample_message_id uuid,
    updated_at        timestamptz NOT NULL
);
CREATE UNIQUE INDEX issues_cause ON issues (org_id, kind, coalesce(consumer_id, connection_id), cause);
-- Lists by status, and the count of the open ones, read an org's rows of
-- one status, the last seen first.
CREATE INDEX issues_status ON issues (org_id, status, last_seen_at, id);
CREATE INDEX issues_seen ON issues (last_seen_at, id);
-- The settles read their consumers' and connections' issues.
CREATE INDEX issues_consumer ON issues (consumer_id) WHERE consumer_id IS NOT NULL;
CREATE INDEX issues_connection ON issues (connection_id) WHERE connection_id IS NOT NULL;

-- The events (or messages) each issue touched, at their last failure: the
-- issue's distinct count and its items, newest first.
CREATE TABLE issue_events (
    issue_id uuid NOT NULL,
    item_id  uuid NOT NULL,
    org_id   uuid NOT NULL,
    at       timestamptz NOT NULL,
    PRIMARY KEY (issue_id, item_id)
);
CREATE INDEX issue_events_at ON issue_events (issue_id, at, item_id);
-- Retention forgets an event's (or message's) place in its issues with it.
CREATE INDEX issue_events_item ON issue_events (item_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON issues, issue_events TO intake_tenant;
ALTER TABLE issues ENABLE ROW LEVEL SECURITY;
ALTER TABLE issue_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY issues_tenant ON issues TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY issue_events_tenant ON issue_events TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE issue_events;
DROP TABLE issues;

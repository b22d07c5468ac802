-- +goose Up
-- Issues (DESIGN §20): the failures that share one cause in one org, one
-- row per (org, kind, subject, cause), written in the transaction of the
-- settle that saw the failure. The subject is a consumer (delivery, rule,
-- backlog) or a connection (request).
CREATE TABLE issues (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL,
    kind              TEXT NOT NULL,
    status            TEXT NOT NULL,
    consumer_id       TEXT NOT NULL DEFAULT '',
    connection_id     TEXT NOT NULL DEFAULT '',
    subject_name      TEXT NOT NULL DEFAULT '',
    cause             TEXT NOT NULL,
    count             INTEGER NOT NULL DEFAULT 0,
    events            INTEGER NOT NULL DEFAULT 0,
    first_seen_at     INTEGER NOT NULL,
    last_seen_at      INTEGER NOT NULL,
    opened_at         INTEGER NOT NULL,
    acknowledged_at   INTEGER,
    resolved_at       INTEGER,
    last_error        TEXT NOT NULL DEFAULT '',
    sample_event_id   TEXT NOT NULL DEFAULT '',
    sample_message_id TEXT NOT NULL DEFAULT '',
    updated_at        INTEGER NOT NULL
);
CREATE UNIQUE INDEX issues_cause ON issues (org_id, kind, consumer_id, connection_id, cause);
-- Lists by status, and the count of the open ones, read an org's rows of
-- one status, the last seen first.
CREATE INDEX issues_status ON issues (org_id, status, last_seen_at, id);
CREATE INDEX issues_seen ON issues (last_seen_at, id);
-- The settles read their consumers' and connections' issues.
CREATE INDEX issues_consumer ON issues (consumer_id) WHERE consumer_id <> '';
CREATE INDEX issues_connection ON issues (connection_id) WHERE connection_id <> '';

-- The events (or messages) each issue touched, at their last failure: the
-- issue's distinct count and its items, newest first.
CREATE TABLE issue_events (
    issue_id TEXT NOT NULL,
    item_id  TEXT NOT NULL,
    org_id   TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (issue_id, item_id)
);
CREATE INDEX issue_events_at ON issue_events (issue_id, at, item_id);
-- Retention forgets an event's (or message's) place in its issues with it.
CREATE INDEX issue_events_item ON issue_events (item_id);

-- +goose Down
DROP TABLE issue_events;
DROP TABLE issues;

-- +goose Up
-- The event-type catalog (DESIGN §13), written by the catalog learners, off
-- the webhook's path: per connection and type, when it was first and last
-- received, how many in all, the JSON Schema inferred from its events'
-- data with the example that last changed it, and a version a learner
-- writes the schema over.
CREATE TABLE event_types (
    org_id           TEXT NOT NULL,
    connection_id    TEXT NOT NULL,
    type             TEXT NOT NULL,
    first_seen_at    INTEGER NOT NULL,
    last_seen_at     INTEGER NOT NULL,
    total            INTEGER NOT NULL,
    schema           TEXT,
    example          TEXT,
    example_event_id TEXT NOT NULL DEFAULT '',
    version          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (connection_id, type)
);
CREATE INDEX event_types_org ON event_types (org_id);

-- Events of a type received in each hour (start, Unix microseconds), kept
-- for the catalog's history: the last 24 hours and the days before.
CREATE TABLE event_type_hours (
    org_id        TEXT NOT NULL,
    connection_id TEXT NOT NULL,
    type          TEXT NOT NULL,
    hour          INTEGER NOT NULL,
    count         INTEGER NOT NULL,
    PRIMARY KEY (connection_id, type, hour)
);
CREATE INDEX event_type_hours_hour ON event_type_hours (hour);

-- Each drift of a type's shape, with the event that showed it.
CREATE TABLE event_type_changes (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL,
    connection_id    TEXT NOT NULL,
    type             TEXT NOT NULL,
    at               INTEGER NOT NULL,
    path             TEXT NOT NULL,
    change           TEXT NOT NULL,
    from_types       TEXT NOT NULL,
    to_types         TEXT NOT NULL,
    example_event_id TEXT NOT NULL
);
CREATE INDEX event_type_changes_type ON event_type_changes (connection_id, type, id);

-- +goose Down
DROP TABLE event_type_changes;
DROP TABLE event_type_hours;
DROP TABLE event_types;

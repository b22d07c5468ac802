-- +goose Up
-- The event-type catalog (DESIGN §13), written by the catalog learners, off
-- the webhook's path: per connection and type, when it was first and last
-- received, how many in all, the JSON Schema inferred from its events'
-- data with the example that last changed it, and a version a learner
-- writes the schema over (each process learns from its own events).
CREATE TABLE event_types (
    org_id           uuid NOT NULL,
    connection_id    uuid NOT NULL,
    type             text NOT NULL,
    first_seen_at    timestamptz NOT NULL,
    last_seen_at     timestamptz NOT NULL,
    total            bigint NOT NULL,
    schema           json,
    example          json,
    example_event_id uuid,
    version          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (connection_id, type)
);
CREATE INDEX event_types_org ON event_types (org_id);

-- Events of a type received in each hour, kept for the catalog's history:
-- the last 24 hours and the days before.
CREATE TABLE event_type_hours (
    org_id        uuid NOT NULL,
    connection_id uuid NOT NULL,
    type          text NOT NULL,
    hour          timestamptz NOT NULL,
    count         bigint NOT NULL,
    PRIMARY KEY (connection_id, type, hour)
);
CREATE INDEX event_type_hours_hour ON event_type_hours (hour);

-- Each drift of a type's shape, with the event that showed it.
CREATE TABLE event_type_changes (
    id               uuid PRIMARY KEY,
    org_id           uuid NOT NULL,
    connection_id    uuid NOT NULL,
    type             text NOT NULL,
    at               timestamptz NOT NULL,
    path             text NOT NULL,
    change           text NOT NULL,
    from_types       text[] NOT NULL,
    to_types         text[] NOT NULL,
    example_event_id uuid NOT NULL
);
CREATE INDEX event_type_changes_type ON event_type_changes (connection_id, type, id);

GRANT SELECT, INSERT, UPDATE, DELETE ON event_types, event_type_hours, event_type_changes TO intake_tenant;
ALTER TABLE event_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_type_hours ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_type_changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY event_types_tenant ON event_types TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY event_type_hours_tenant ON event_type_hours TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);
CREATE POLICY event_type_changes_tenant ON event_type_changes TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE event_type_changes;
DROP TABLE event_type_hours;
DROP TABLE event_types;

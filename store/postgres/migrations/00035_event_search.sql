-- +goose NO TRANSACTION
-- +goose Up
-- An event's data is searched through a row of its own, written once with
-- the event and never updated, which holds the two search indexes of
-- migration 20. An events row is updated several times after its insert
-- (claims, route settles) and none of those updates can be HOT, as state
-- and the lease are in other indexes: each put the event's data into both
-- GIN indexes again, most of a settle's time. events.data stays and is
-- written as before: a process of the release before this one reads and
-- delivers it during a rolling upgrade.
--
-- The row is made and removed by triggers on events, in the statement that
-- inserts or deletes the events, so events written or deleted by a process
-- of the earlier release, still serving during the upgrade, have theirs
-- too. The insert trigger is committed before the backfill starts: every
-- event is either inserted after it (the trigger writes its row) or
-- committed before the backfill reads it. Events stored before are copied
-- in transactions of 10 000 in the order of their key, the indexes built
-- without holding writes up, and the old ones then dropped the same way.
-- Each step may run again after a crash.
CREATE TABLE IF NOT EXISTS event_search (
    event_id uuid PRIMARY KEY,
    org_id   uuid NOT NULL,
    data     json NOT NULL
);
GRANT SELECT, INSERT, UPDATE, DELETE ON event_search TO intake_tenant;
ALTER TABLE event_search ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS event_search_tenant ON event_search;
CREATE POLICY event_search_tenant ON event_search TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search (event_id, org_id, data) SELECT id, org_id, data FROM inserted;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_search_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM event_search WHERE event_id IN (SELECT id FROM deleted);
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS event_search_insert ON events;
CREATE TRIGGER event_search_insert AFTER INSERT ON events REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION event_search_insert();
DROP TRIGGER IF EXISTS event_search_delete ON events;
CREATE TRIGGER event_search_delete AFTER DELETE ON events REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION event_search_delete();

-- +goose StatementBegin
DO $$
DECLARE
    last uuid := '00000000-0000-0000-0000-000000000000';
    next uuid;
BEGIN
    LOOP
        next := NULL;
        SELECT id INTO next FROM (
            SELECT id FROM events WHERE id > last ORDER BY id LIMIT 10000) k
         ORDER BY id DESC LIMIT 1;
        EXIT WHEN next IS NULL;
        INSERT INTO event_search (event_id, org_id, data)
        SELECT id, org_id, data FROM events WHERE id > last AND id <= next
        ON CONFLICT (event_id) DO NOTHING;
        COMMIT;
        last := next;
    END LOOP;
END $$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS event_search_match ON event_search USING gin (intake_jsonb(data) jsonb_path_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_search_text ON event_search USING gin ((data::text) gin_trgm_ops);
ANALYZE event_search;
DROP INDEX CONCURRENTLY IF EXISTS events_data_match;
DROP INDEX CONCURRENTLY IF EXISTS events_data_text;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_data_match ON events USING gin (intake_jsonb(data) jsonb_path_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_data_text ON events USING gin ((data::text) gin_trgm_ops);
DROP TRIGGER IF EXISTS event_search_insert ON events;
DROP TRIGGER IF EXISTS event_search_delete ON events;
DROP FUNCTION IF EXISTS event_search_insert();
DROP FUNCTION IF EXISTS event_search_delete();
DROP TABLE IF EXISTS event_search;

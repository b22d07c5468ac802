-- +goose NO TRANSACTION
-- +goose Up
-- An event's search row carries what a list filters and orders by besides
-- the org and id it has: the event's creation time and type, both fixed at
-- its insert. A search then finds its page in event_search alone (its data
-- indexes, then (org_id, event_id) newest first as events_org serves a
-- list) and reads events only for the rows it shows and for a state filter,
-- where each match found cost an events_org probe and an events heap read
-- before (issue 46).
--
-- The insert trigger writes the two columns from the statement that
-- inserts the events, for a process of either earlier release too. The
-- lock, taken once the trigger writes them, waits for every transaction
-- that has written events to end, so every row without them is committed
-- before the copy reads it. The copy fills them in the order of the key,
-- 10 000 rows a transaction; a row whose event is gone (the window of
-- migration 35's copy) is deleted, as no search may find it now that a
-- search no longer reads events to find its rows. Each step may run again
-- after a crash. The updates leave the rows' old versions to autovacuum.
ALTER TABLE event_search ADD COLUMN IF NOT EXISTS created_at timestamptz, ADD COLUMN IF NOT EXISTS type text;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search (event_id, org_id, created_at, type, data)
    SELECT id, org_id, created_at, type, data FROM inserted;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    LOCK TABLE events IN SHARE MODE;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    last uuid := '00000000-0000-0000-0000-000000000000';
    next uuid;
BEGIN
    LOOP
        next := NULL;
        SELECT event_id INTO next FROM (
            SELECT event_id FROM event_search WHERE event_id > last ORDER BY event_id LIMIT 10000) k
         ORDER BY event_id DESC LIMIT 1;
        EXIT WHEN next IS NULL;
        UPDATE event_search s SET created_at = e.created_at, type = e.type FROM events e
         WHERE e.id = s.event_id AND s.event_id > last AND s.event_id <= next AND s.created_at IS NULL;
        DELETE FROM event_search s WHERE s.event_id > last AND s.event_id <= next AND s.created_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = s.event_id);
        COMMIT;
        last := next;
    END LOOP;
END $$;
-- +goose StatementEnd

ALTER TABLE event_search DROP CONSTRAINT IF EXISTS event_search_ordered;
ALTER TABLE event_search ADD CONSTRAINT event_search_ordered CHECK (created_at IS NOT NULL AND type IS NOT NULL) NOT VALID;
ALTER TABLE event_search VALIDATE CONSTRAINT event_search_ordered;
ALTER TABLE event_search ALTER COLUMN created_at SET NOT NULL, ALTER COLUMN type SET NOT NULL;
ALTER TABLE event_search DROP CONSTRAINT event_search_ordered;
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_search_org ON event_search (org_id, event_id);
ANALYZE event_search;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS event_search_org;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search (event_id, org_id, data) SELECT id, org_id, data FROM inserted;
    RETURN NULL;
END $$;
-- +goose StatementEnd

ALTER TABLE event_search DROP COLUMN IF EXISTS created_at, DROP COLUMN IF EXISTS type;

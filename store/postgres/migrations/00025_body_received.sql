-- +goose NO TRANSACTION
-- +goose Up
-- A body carries its message's received_at, indexed, so that the sweeper
-- walks only the bodies still stored, oldest first, and never the
-- messages whose bodies already went (weeks of them, past the replay
-- window). Bodies stored before take their message's, in transactions of
-- 10 000 in the order of their key, and the index is built without
-- holding writes up: ingest goes on while a large table migrates. Each
-- step may run again after a crash.
ALTER TABLE message_bodies ADD COLUMN IF NOT EXISTS received_at timestamptz;

-- +goose StatementBegin
DO $$
DECLARE
    last uuid := '00000000-0000-0000-0000-000000000000';
    next uuid;
BEGIN
    LOOP
        next := NULL;
        SELECT message_id INTO next FROM (
            SELECT message_id FROM message_bodies WHERE message_id > last ORDER BY message_id LIMIT 10000) k
         ORDER BY message_id DESC LIMIT 1;
        EXIT WHEN next IS NULL;
        UPDATE message_bodies b SET received_at = m.received_at FROM messages m
         WHERE m.id = b.message_id AND b.message_id > last AND b.message_id <= next AND b.received_at IS NULL;
        COMMIT;
        last := next;
    END LOOP;
END $$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS message_bodies_received ON message_bodies (received_at);

-- +goose Down
DROP INDEX IF EXISTS message_bodies_received;
ALTER TABLE message_bodies DROP COLUMN IF EXISTS received_at;

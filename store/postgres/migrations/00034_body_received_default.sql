-- +goose Up
-- A body written without its received_at (by a process of a release before
-- migration 25, still serving during a rolling upgrade) takes its
-- message's, so retention, which walks bodies by received_at, finds it.
-- Bodies such a process wrote before this migration are stamped here.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION message_bodies_received_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.received_at := coalesce((SELECT received_at FROM messages WHERE id = NEW.message_id), now());
    RETURN NEW;
END $$;
-- +goose StatementEnd

CREATE TRIGGER message_bodies_received_at BEFORE INSERT ON message_bodies
    FOR EACH ROW WHEN (NEW.received_at IS NULL) EXECUTE FUNCTION message_bodies_received_at();

UPDATE message_bodies b SET received_at = m.received_at FROM messages m
 WHERE b.received_at IS NULL AND m.id = b.message_id;

-- +goose Down
DROP TRIGGER IF EXISTS message_bodies_received_at ON message_bodies;
DROP FUNCTION IF EXISTS message_bodies_received_at();

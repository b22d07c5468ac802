-- +goose Up
-- A body carries its message's received_at, indexed, so that the sweeper
-- walks only the bodies still stored, oldest first, and never the
-- messages whose bodies already went (weeks of them, past the replay
-- window). Bodies stored before take their message's.
ALTER TABLE message_bodies ADD COLUMN received_at timestamptz;
UPDATE message_bodies b SET received_at = m.received_at FROM messages m WHERE m.id = b.message_id;
ALTER TABLE message_bodies ALTER COLUMN received_at SET NOT NULL;
CREATE INDEX message_bodies_received ON message_bodies (received_at);

-- +goose Down
DROP INDEX message_bodies_received;
ALTER TABLE message_bodies DROP COLUMN received_at;

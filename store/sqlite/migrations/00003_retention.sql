-- +goose Up
-- Retention and replay windows select messages by when they arrived.
CREATE INDEX messages_received ON messages (received_at);

-- +goose Down
DROP INDEX messages_received;

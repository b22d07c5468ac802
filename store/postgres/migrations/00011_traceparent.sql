-- +goose Up
-- The W3C traceparent of the step that created each row, so the worker
-- (for a message) and the router (for an event) continue its trace.
ALTER TABLE messages ADD COLUMN traceparent text NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN traceparent text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE events DROP COLUMN traceparent;
ALTER TABLE messages DROP COLUMN traceparent;

-- +goose Up
-- An ordered consumer's route waits while an earlier webhook of its
-- connection is not yet fanned out: its message queued or being processed,
-- or its event written and not yet fanned out.
CREATE INDEX messages_in_flight ON messages (connection_id, received_at) WHERE state IN ('queued', 'processing');
CREATE INDEX events_unrouted ON events (connection_id, received_at)
	WHERE state IN ('pending', 'retrying') AND next_attempt_at IS NOT NULL;

-- +goose Down
DROP INDEX events_unrouted;
DROP INDEX messages_in_flight;

-- +goose Up
-- Retention deletes a message's identities with it.
CREATE INDEX message_identities_message ON message_identities (message_id);

-- +goose Down
DROP INDEX message_identities_message;

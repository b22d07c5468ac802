-- +goose Up
-- The header names a connection's config made credentials before a change
-- (a JSON list): messages stored then carry them, so they stay hidden.
ALTER TABLE connections ADD COLUMN former_credential_headers TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE connections DROP COLUMN former_credential_headers;

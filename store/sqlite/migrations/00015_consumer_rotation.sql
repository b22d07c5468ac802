-- +goose Up
-- A consumer's signing secret rotated with overlap (DESIGN §9): the old one
-- signs too, beside the new, until old_secret_until.
ALTER TABLE consumers ADD COLUMN sealed_old_secret BLOB;
ALTER TABLE consumers ADD COLUMN old_secret_until INTEGER;

-- +goose Down
ALTER TABLE consumers DROP COLUMN old_secret_until;
ALTER TABLE consumers DROP COLUMN sealed_old_secret;

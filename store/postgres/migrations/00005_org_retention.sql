-- +goose Up
-- An org's own retention, in microseconds; NULL keeps the server's.
ALTER TABLE orgs ADD COLUMN body_retention_us bigint;
ALTER TABLE orgs ADD COLUMN retention_us bigint;

-- +goose Down
ALTER TABLE orgs DROP COLUMN retention_us;
ALTER TABLE orgs DROP COLUMN body_retention_us;

-- +goose Up
-- Soft delete: a deleted row stays for history; every read ignores it.
ALTER TABLE connections ADD COLUMN deleted_at INTEGER;
ALTER TABLE endpoints ADD COLUMN deleted_at INTEGER;
ALTER TABLE consumers ADD COLUMN deleted_at INTEGER;

-- +goose Down
ALTER TABLE consumers DROP COLUMN deleted_at;
ALTER TABLE endpoints DROP COLUMN deleted_at;
ALTER TABLE connections DROP COLUMN deleted_at;

-- +goose Up
-- Every operator-editable row counts its changes: an update is written only
-- over the version it read, so two racing changes never lose each other.
ALTER TABLE connections ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE endpoints ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE consumers ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE consumers DROP COLUMN version;
ALTER TABLE endpoints DROP COLUMN version;
ALTER TABLE connections DROP COLUMN version;

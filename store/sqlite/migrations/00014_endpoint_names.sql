-- +goose Up
-- An endpoint's name, unique among the named ones of its connection, is what
-- `intake apply` matches it by (DESIGN §10). Empty: unnamed.
ALTER TABLE endpoints ADD COLUMN name TEXT NOT NULL DEFAULT '';
-- Control refuses a taken name; the index holds it against a race.
CREATE UNIQUE INDEX endpoints_connection_name ON endpoints (connection_id, name) WHERE name <> '' AND deleted_at IS NULL;

-- +goose Down
DROP INDEX endpoints_connection_name;
ALTER TABLE endpoints DROP COLUMN name;

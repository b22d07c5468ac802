-- +goose Up
-- An endpoint's name, unique among the named ones of its connection, is what
-- `intake apply` matches it by (DESIGN §10). Empty: unnamed.
ALTER TABLE endpoints ADD COLUMN name text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE endpoints DROP COLUMN name;

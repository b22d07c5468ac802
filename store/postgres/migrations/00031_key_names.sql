-- +goose Up
-- An API key may be named, so a list tells who or what holds each.
ALTER TABLE api_keys ADD COLUMN name text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE api_keys DROP COLUMN name;

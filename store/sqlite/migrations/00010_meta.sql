-- +goose Up
-- Facts about the store itself, one value per name: the fingerprint of the
-- master key its secrets are sealed with, so a process started with
-- another key refuses to serve.
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE meta;

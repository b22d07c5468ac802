-- +goose Up
-- Facts about the store itself, one value per name: the fingerprint of the
-- master key its secrets are sealed with, so a process started with
-- another key refuses to serve. It belongs to no org: intake_tenant gets
-- no grant on it.
CREATE TABLE meta (
    name  text PRIMARY KEY,
    value text NOT NULL
);

-- +goose Down
DROP TABLE meta;

-- +goose Up
-- An org's API key has a role: viewer, operator or admin. The keys made
-- before roles were admins, and stay so.
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('viewer', 'operator', 'admin'));

-- +goose Down
ALTER TABLE api_keys DROP COLUMN role;

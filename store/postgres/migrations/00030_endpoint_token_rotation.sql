-- +goose Up
-- A rotated endpoint token keeps working beside its successor until
-- previous_expires_at; ingress finds the endpoint by either hash.
ALTER TABLE endpoints ADD COLUMN previous_token_hash bytea;
ALTER TABLE endpoints ADD COLUMN previous_sealed_token bytea;
ALTER TABLE endpoints ADD COLUMN previous_expires_at timestamptz;
CREATE INDEX endpoints_previous_token ON endpoints (previous_token_hash) WHERE previous_token_hash IS NOT NULL;

-- +goose Down
DROP INDEX endpoints_previous_token;
ALTER TABLE endpoints DROP COLUMN previous_expires_at;
ALTER TABLE endpoints DROP COLUMN previous_sealed_token;
ALTER TABLE endpoints DROP COLUMN previous_token_hash;

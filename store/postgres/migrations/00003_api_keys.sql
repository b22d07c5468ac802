-- +goose Up
-- An org may hold several API keys (rotation), each revocable.
CREATE TABLE api_keys (
    id         uuid PRIMARY KEY,
    org_id     uuid NOT NULL REFERENCES orgs (id),
    prefix     text NOT NULL,
    key_hash   bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX api_keys_org ON api_keys (org_id, id);
INSERT INTO api_keys (id, org_id, prefix, key_hash, created_at)
    SELECT gen_random_uuid(), id, '', api_key_hash, created_at FROM orgs;
ALTER TABLE orgs DROP COLUMN api_key_hash;

GRANT SELECT, INSERT, UPDATE, DELETE ON api_keys TO intake_tenant;
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY api_keys_tenant ON api_keys TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
ALTER TABLE orgs ADD COLUMN api_key_hash bytea;
UPDATE orgs o SET api_key_hash = (SELECT k.key_hash FROM api_keys k WHERE k.org_id = o.id ORDER BY k.id LIMIT 1);
DROP TABLE api_keys;

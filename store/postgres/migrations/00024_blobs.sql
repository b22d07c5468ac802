-- +goose Up
-- A body above --blob-threshold is kept in object storage: its row keeps
-- the headers and names the object, and its body column stays empty. A
-- replay names its original's object, so several rows may name one.
ALTER TABLE message_bodies ADD COLUMN blob_key text NOT NULL DEFAULT '';
CREATE INDEX message_bodies_blob ON message_bodies (blob_key) WHERE blob_key <> '';

-- The objects of deleted bodies, recorded in the transaction that deleted
-- them, for the sweeper to delete from object storage. org_id is the
-- message's: an org's own erasure records its keys under row-level
-- security.
CREATE TABLE blob_deletes (
    key    text PRIMARY KEY,
    org_id uuid NOT NULL
);
GRANT SELECT, INSERT, UPDATE, DELETE ON blob_deletes TO intake_tenant;
ALTER TABLE blob_deletes ENABLE ROW LEVEL SECURITY;
CREATE POLICY blob_deletes_tenant ON blob_deletes TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE blob_deletes;
DROP INDEX message_bodies_blob;
ALTER TABLE message_bodies DROP COLUMN blob_key;

-- +goose Up
-- A body above --blob-threshold is kept in object storage: its row keeps
-- the headers and names the object, and its body column stays empty. A
-- replay names its original's object, so several rows may name one.
ALTER TABLE message_bodies ADD COLUMN blob_key TEXT NOT NULL DEFAULT '';
CREATE INDEX message_bodies_blob ON message_bodies (blob_key) WHERE blob_key <> '';

-- The objects of deleted bodies, recorded in the transaction that deleted
-- them, for the sweeper to delete from object storage.
CREATE TABLE blob_deletes (
    key TEXT PRIMARY KEY
);

-- +goose Down
DROP TABLE blob_deletes;
DROP INDEX message_bodies_blob;
ALTER TABLE message_bodies DROP COLUMN blob_key;

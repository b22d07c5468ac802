-- +goose Up
-- When each pending delete was recorded (the now of the statement that
-- deleted the body; the latest, when bodies naming one object went at
-- different times). With --replicate the sweeper deletes an object only
-- once its record is older than --replicate-retention: a store restored
-- to a time before the record names the object. Records made before this
-- column (or by a process of the release before it, during a rolling
-- upgrade) have none: '-infinity', as old as can be, they go as they did.
-- A constant default changes no row: the table is not rewritten.
ALTER TABLE blob_deletes ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX blob_deletes_recorded ON blob_deletes (recorded_at, key);

-- +goose Down
DROP INDEX blob_deletes_recorded;
ALTER TABLE blob_deletes DROP COLUMN recorded_at;

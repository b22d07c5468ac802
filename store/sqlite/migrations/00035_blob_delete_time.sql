-- +goose Up
-- When each pending delete was recorded (the now of the statement that
-- deleted the body, in microseconds; the latest, when bodies naming one
-- object went at different times). With --replicate the sweeper deletes
-- an object only once its record is older than --replicate-retention: a
-- store restored to a time before the record names the object. Records
-- made before this column have none (0), as old as can be: they go as
-- they did.
ALTER TABLE blob_deletes ADD COLUMN recorded_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX blob_deletes_recorded ON blob_deletes (recorded_at, key);

-- +goose Down
DROP INDEX blob_deletes_recorded;
ALTER TABLE blob_deletes DROP COLUMN recorded_at;

-- +goose Up
-- Orgs are renamed over the version read and deleted softly (seed 003's
-- deleted_at): a deleted org's rows stay for history, every read ignores it.
ALTER TABLE orgs ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE orgs ADD COLUMN deleted_at timestamptz;
-- A name is unique among live orgs, since `intake apply` finds an org by it.
-- Orgs created under a name an older org already had keep it with their id
-- added, so the index can hold and apply finds the oldest by the name.
UPDATE orgs SET name = orgs.name || ' (' || orgs.id::text || ')', version = orgs.version + 1
WHERE EXISTS (SELECT 1 FROM orgs o WHERE o.name = orgs.name
              AND (o.created_at < orgs.created_at OR (o.created_at = orgs.created_at AND o.id < orgs.id)));
-- Control refuses a taken name; the index holds it against a race.
CREATE UNIQUE INDEX orgs_live_name ON orgs (name) WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX orgs_live_name;
ALTER TABLE orgs DROP COLUMN deleted_at;
ALTER TABLE orgs DROP COLUMN version;

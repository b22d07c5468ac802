-- +goose Up
-- Search (DESIGN §13): a match is judged with jsonb's @> over a GIN
-- jsonb_path_ops index of events' data, and q with ILIKE over pg_trgm GIN
-- indexes of events' data as text and of messages' bodies. Creating the
-- indexes reads every stored row, so nothing stored earlier is missed.
-- pg_trgm is a trusted extension: the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- data is json (consumers get the adapter's bytes as they were), and not
-- every json is a jsonb: a \u0000, a lone surrogate or a number beyond
-- numeric's range is refused. Such data matches nothing, rather than
-- failing the settle that writes it. Catching the error takes a
-- subtransaction, which a parallel plan cannot start: PARALLEL UNSAFE.
-- +goose StatementBegin
CREATE FUNCTION intake_jsonb(data json) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
BEGIN
    RETURN data::jsonb;
EXCEPTION WHEN data_exception THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE INDEX events_data_match ON events USING gin (intake_jsonb(data) jsonb_path_ops);
CREATE INDEX events_data_text ON events USING gin ((data::text) gin_trgm_ops);
-- A body is bytes, any bytes: 'escape' writes it as text without failing
-- (bytes above 0x7f as \ooo, a backslash doubled); q looks at its first MiB.
-- Indexing a body's trigrams in the commit that acknowledges it would cost
-- ingest most of its rate (a third of it, measured), so a body is stored
-- unsearchable and the store's indexer marks it searchable, which indexes
-- it, a batch at a time, soon after; a search reads the index for the
-- searchable and checks the few others directly. Bodies stored before are
-- searchable already (the default applies to them without rewriting a
-- row); those stored from now on start unsearchable.
ALTER TABLE message_bodies ADD COLUMN searchable boolean NOT NULL DEFAULT true;
ALTER TABLE message_bodies ALTER COLUMN searchable SET DEFAULT false;
CREATE INDEX message_bodies_text ON message_bodies
    USING gin (encode(substring(body FROM 1 FOR 1048576), 'escape') gin_trgm_ops) WHERE searchable;
CREATE INDEX message_bodies_unsearchable ON message_bodies (message_id) WHERE NOT searchable;

-- +goose Down
DROP INDEX message_bodies_unsearchable;
DROP INDEX message_bodies_text;
ALTER TABLE message_bodies DROP COLUMN searchable;
DROP INDEX events_data_text;
DROP INDEX events_data_match;
DROP FUNCTION intake_jsonb(json);

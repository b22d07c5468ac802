-- +goose Up
-- Messages and all that hangs off them live in partitions of one UTC day,
-- ranged on the time in their UUIDv7: a message's own id, its body's and
-- attempts' message_id, an event's own id, its routes' and deliveries'
-- event_id. Retention drops a day's partitions whole instead of deleting
-- its rows one by one (see partitions.go).
--
-- The rows already stored stay where they are: each table becomes the
-- "legacy" partition of its new self, holding every id before the start of
-- tomorrow, and is emptied row by row as its rows expire, as before, until
-- the whole of it is past retention and it is dropped like a day. A
-- default partition takes any row no other partition covers; partitions
-- for the coming days are made by the store.

-- A body no longer references its message: a foreign key would keep a
-- day of messages from being dropped before its bodies.
ALTER TABLE message_bodies DROP CONSTRAINT message_bodies_message_id_fkey;

-- The provider event ids that make an event unique can no longer be a
-- unique index of events (a partitioned table's unique indexes must hold
-- its range key): they are kept apart, and leave once their event's day is
-- dropped.
CREATE TABLE event_keys (
    connection_id     uuid NOT NULL,
    provider_event_id text NOT NULL,
    event_id          uuid NOT NULL,
    org_id            uuid NOT NULL,
    PRIMARY KEY (connection_id, provider_event_id)
);
CREATE INDEX event_keys_event ON event_keys (event_id);
INSERT INTO event_keys (connection_id, provider_event_id, event_id, org_id)
SELECT connection_id, provider_event_id, id, org_id FROM events WHERE NOT replay AND provider_event_id <> '';
DROP INDEX events_provider_event;
GRANT SELECT, INSERT, UPDATE, DELETE ON event_keys TO intake_tenant;
ALTER TABLE event_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY event_keys_tenant ON event_keys TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- A delivery's key holds its event's id, the range key.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD PRIMARY KEY (event_id, id);
DROP INDEX deliveries_event;

-- legacy_bound is the first id of tomorrow (UTC).
-- +goose StatementBegin
CREATE FUNCTION pg_temp.legacy_bound() RETURNS uuid LANGUAGE sql AS $$
    SELECT (lpad(to_hex((extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') * 1000)::bigint), 12, '0')
            || repeat('0', 20))::uuid
$$;
-- +goose StatementEnd

-- begin_partitioning renames table t to t_legacy (and its indexes to
-- legacy_…), makes t anew partitioned on key, with a default partition, and
-- moves into it any row at or after the legacy bound (none, unless a clock
-- ran ahead). The caller then makes t's key and indexes.
-- +goose StatementBegin
CREATE FUNCTION pg_temp.begin_partitioning(t text, key text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_legacy');
    FOR r IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = (t || '_legacy')::regclass LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, 'legacy_' || r.relname);
    END LOOP;
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS) PARTITION BY RANGE (%I)', t, t || '_legacy', key);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_default', t);
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
                   t || '_legacy', key, pg_temp.legacy_bound(), t);
END
$$;
-- +goose StatementEnd

-- end_partitioning attaches t_legacy as the partition of every id before
-- the legacy bound (its indexes match t's, so they are attached, not
-- built), and gives t its row-level security.
-- +goose StatementBegin
CREATE FUNCTION pg_temp.end_partitioning(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                   t, t || '_legacy', pg_temp.legacy_bound());
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO intake_tenant', t);
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY %I ON %I TO intake_tenant
        USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
        WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)$p$, t || '_tenant', t);
END
$$;
-- +goose StatementEnd

SELECT pg_temp.begin_partitioning('messages', 'id');
ALTER TABLE messages ADD PRIMARY KEY (id);
CREATE INDEX messages_due ON messages (next_attempt_at) WHERE state IN ('queued', 'failed');
CREATE INDEX messages_leased ON messages (lease_until) WHERE state = 'processing';
CREATE INDEX messages_org ON messages (org_id, id);
CREATE INDEX messages_endpoint ON messages (endpoint_id, id);
CREATE INDEX messages_received ON messages (received_at);
CREATE INDEX messages_live ON messages (org_id, state, received_at) WHERE state IN ('queued', 'processing', 'failed');
CREATE INDEX messages_dead ON messages (org_id) WHERE state = 'dead';
CREATE INDEX messages_in_flight ON messages (connection_id, received_at) WHERE state IN ('queued', 'processing');
SELECT pg_temp.end_partitioning('messages');

SELECT pg_temp.begin_partitioning('message_bodies', 'message_id');
ALTER TABLE message_bodies ADD PRIMARY KEY (message_id);
CREATE INDEX message_bodies_blob ON message_bodies (blob_key) WHERE blob_key <> '';
CREATE INDEX message_bodies_text ON message_bodies
    USING gin (encode(substring(body FROM 1 FOR 1048576), 'escape') gin_trgm_ops) WHERE searchable;
CREATE INDEX message_bodies_unsearchable ON message_bodies (message_id) WHERE NOT searchable;
SELECT pg_temp.end_partitioning('message_bodies');

SELECT pg_temp.begin_partitioning('message_attempts', 'message_id');
ALTER TABLE message_attempts ADD PRIMARY KEY (message_id, attempt);
SELECT pg_temp.end_partitioning('message_attempts');

SELECT pg_temp.begin_partitioning('events', 'id');
ALTER TABLE events ADD PRIMARY KEY (id);
CREATE INDEX events_due ON events (next_attempt_at, lease_until) WHERE state IN ('pending', 'retrying');
CREATE INDEX events_org ON events (org_id, id);
CREATE INDEX events_message ON events (message_id);
CREATE INDEX events_counted_exactly ON events (org_id, provider, state)
    WHERE state IN ('pending', 'retrying', 'dead', 'no_consumer');
CREATE INDEX events_unrouted ON events (connection_id, received_at)
    WHERE state IN ('pending', 'retrying') AND next_attempt_at IS NOT NULL;
CREATE INDEX events_data_match ON events USING gin (intake_jsonb(data) jsonb_path_ops);
CREATE INDEX events_data_text ON events USING gin ((data::text) gin_trgm_ops);
SELECT pg_temp.end_partitioning('events');
-- Stats estimates the settled events per provider from each partition's
-- statistics (the legacy partition keeps events_provider_state).
CREATE STATISTICS events_default_provider_state (mcv) ON provider, state FROM events_default;

SELECT pg_temp.begin_partitioning('routes', 'event_id');
ALTER TABLE routes ADD PRIMARY KEY (event_id, consumer_id);
CREATE INDEX routes_due ON routes (consumer_id, next_at) WHERE state = 'waiting';
CREATE INDEX routes_in_flight ON routes (consumer_id, lease_until) WHERE state = 'waiting' AND lease_until IS NOT NULL;
CREATE INDEX routes_order ON routes (consumer_id, order_key, order_at, event_id) WHERE state = 'waiting' AND order_key <> '';
SELECT pg_temp.end_partitioning('routes');

SELECT pg_temp.begin_partitioning('deliveries', 'event_id');
ALTER TABLE deliveries ADD PRIMARY KEY (event_id, id);
CREATE INDEX deliveries_consumer_at ON deliveries (consumer_id, at);
SELECT pg_temp.end_partitioning('deliveries');

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'day partitions cannot be undone in place: restore the backup taken before the upgrade';
END
$$;
-- +goose StatementEnd

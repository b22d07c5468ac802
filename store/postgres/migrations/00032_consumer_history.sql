-- +goose NO TRANSACTION
-- +goose Up
-- A consumer's history (its calls by hour and by day, with their latency)
-- reads the index alone. The wider index is built beside the old one
-- without holding writes up, then takes its place.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_consumer_calls ON deliveries (consumer_id, at) INCLUDE (outcome, latency_us, org_id);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_consumer_at;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_consumer_at ON deliveries (consumer_id, at);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_consumer_calls;

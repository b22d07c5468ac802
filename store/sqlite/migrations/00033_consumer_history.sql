-- +goose Up
-- A consumer's history (its calls by hour and by day, with their latency)
-- reads the index alone.
DROP INDEX deliveries_consumer_at;
CREATE INDEX deliveries_consumer_at ON deliveries (consumer_id, at, outcome, latency_us);

-- +goose Down
DROP INDEX deliveries_consumer_at;
CREATE INDEX deliveries_consumer_at ON deliveries (consumer_id, at);

-- +goose Up
-- A delivery keeps the consumer's attempts in force when the call was made
-- (0: recorded before this column) and, for an HTTP consumer, its answer
-- (JSON: status, two headers, the first 4 KiB of the body; NULL: none).
-- Text, not jsonb: the body is kept byte for byte as it was encoded.
ALTER TABLE deliveries ADD COLUMN max_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN response text;

-- +goose Down
ALTER TABLE deliveries DROP COLUMN response;
ALTER TABLE deliveries DROP COLUMN max_attempts;

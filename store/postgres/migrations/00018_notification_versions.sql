-- +goose Up
-- An org's notification settings count their changes too: a put is written
-- only over the version it read, so two racing puts never lose each other
-- (nor the signing secret the first one minted).
ALTER TABLE notification_settings ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE notification_settings DROP COLUMN version;

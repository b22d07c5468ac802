-- +goose Up
-- A notification URL that carries credentials is kept sealed whole; url
-- shows them as ***.
ALTER TABLE notification_settings ADD COLUMN sealed_url BLOB;

-- +goose Down
ALTER TABLE notification_settings DROP COLUMN sealed_url;

-- +goose Up
-- A consumer's url that carries credentials (a broker's password) is kept
-- sealed whole; the url column holds it with the password shown as ***.
ALTER TABLE consumers ADD COLUMN sealed_url BLOB;

-- +goose Down
ALTER TABLE consumers DROP COLUMN sealed_url;

-- +goose Up
-- A person signed in with single sign-on holds no key: the session names
-- them (subject, email) for the audit and carries the role the people map
-- gave them at sign-in; its key_hash is empty. Sessions signed in with a
-- token keep working as they are, with '' in each new column.
ALTER TABLE console_sessions ADD COLUMN subject text NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN email text NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN role text NOT NULL DEFAULT '';

-- +goose Down
DELETE FROM console_sessions WHERE subject <> '';
ALTER TABLE console_sessions DROP COLUMN role;
ALTER TABLE console_sessions DROP COLUMN email;
ALTER TABLE console_sessions DROP COLUMN subject;

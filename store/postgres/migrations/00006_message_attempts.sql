-- +goose Up
-- Every settled processing attempt of a message, for operators.
CREATE TABLE message_attempts (
    message_id    uuid NOT NULL,
    org_id        uuid NOT NULL,
    attempt       integer NOT NULL,
    state         text NOT NULL,
    outcome       text NOT NULL,
    error_code    text NOT NULL,
    error_message text NOT NULL,
    at            timestamptz NOT NULL,
    PRIMARY KEY (message_id, attempt)
);
ALTER TABLE message_attempts ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, UPDATE, DELETE ON message_attempts TO intake_tenant;
CREATE POLICY message_attempts_tenant ON message_attempts TO intake_tenant
    USING (org_id = nullif(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = nullif(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE message_attempts;

-- +goose Up
CREATE TABLE audit_log (
    id          uuid PRIMARY KEY,
    org_id      uuid, -- NULL: an action on no org
    actor       text NOT NULL,
    action      text NOT NULL,
    target_type text NOT NULL,
    target_id   text NOT NULL,
    detail      text NOT NULL,
    at          timestamptz NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);

GRANT SELECT, INSERT ON audit_log TO intake_tenant;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_tenant ON audit_log TO intake_tenant
    USING (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid)
    WITH CHECK (org_id = NULLIF(current_setting('intake.org_id', true), '')::uuid);

-- +goose Down
DROP TABLE audit_log;

-- +goose Up
CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    detail      TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);

-- +goose Down
DROP TABLE audit_log;

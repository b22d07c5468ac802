-- +goose Up
-- Rules (DESIGN §8): a consumer's CEL filter and JavaScript transform, and a
-- connection's CEL filter over the events it interprets. Empty: none.
ALTER TABLE consumers ADD COLUMN filter TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN transform TEXT NOT NULL DEFAULT '';
ALTER TABLE connections ADD COLUMN filter TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE connections DROP COLUMN filter;
ALTER TABLE consumers DROP COLUMN transform;
ALTER TABLE consumers DROP COLUMN filter;

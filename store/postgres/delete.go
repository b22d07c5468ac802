package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// Delete soft-deletes a connection (with its endpoints), an endpoint, a
// consumer or an org (with its connections, endpoints and consumers)
// visible in sc.
func (s *Store) Delete(ctx context.Context, sc intake.Scope, kind intake.DeleteKind, id string, at time.Time, audit ...intake.AuditEntry) error {
	table := map[intake.DeleteKind]string{intake.DeleteConnection: "connections", intake.DeleteEndpoint: "endpoints",
		intake.DeleteConsumer: "consumers", intake.DeleteOrg: "orgs"}[kind]
	if table == "" {
		return intake.Errorf(intake.EINVALID, "cannot delete a %q", kind)
	}
	if !validIDs(id) {
		return notFound(string(kind), id)
	}
	if kind == intake.DeleteOrg {
		return s.deleteOrg(ctx, sc, id, at, audit)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE `+table+` SET deleted_at = $1 WHERE deleted_at IS NULL AND id = $2
			AND ($3::uuid IS NULL OR org_id = $3)`, ts(at), id, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(string(kind), id)
		}
		if kind == intake.DeleteConnection {
			if _, err = tx.Exec(ctx, `UPDATE endpoints SET deleted_at = $1 WHERE deleted_at IS NULL AND connection_id = $2`, ts(at), id); err != nil {
				return err
			}
		}
		return s.announce(ctx, tx)
	})
}

// deleteOrg soft-deletes an org and what it configured, so that every read
// that ignores deleted rows (ingress's token lookup among them) ignores
// them too; its messages, events and audit stay.
func (s *Store) deleteOrg(ctx context.Context, sc intake.Scope, id string, at time.Time, audit []intake.AuditEntry) error {
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE orgs SET deleted_at = $1, version = version + 1 WHERE deleted_at IS NULL AND id = $2
			AND ($3::uuid IS NULL OR id = $3)`, ts(at), id, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("org", id)
		}
		for _, table := range []string{"connections", "endpoints", "consumers"} {
			if _, err := tx.Exec(ctx, `UPDATE `+table+` SET deleted_at = $1 WHERE deleted_at IS NULL AND org_id = $2`, ts(at), id); err != nil {
				return err
			}
		}
		return s.announce(ctx, tx)
	})
}

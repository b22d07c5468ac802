package sqlite

import (
	"context"
	"time"

	"github.com/intakehq/intake"
)

// Delete soft-deletes a connection (with its endpoints), an endpoint, a
// consumer or an org (with its connections, endpoints and consumers)
// visible in sc.
func (s *Store) Delete(ctx context.Context, sc intake.Scope, kind intake.DeleteKind, id string, at time.Time, audit ...intake.AuditEntry) error {
	if kind == intake.DeleteOrg {
		return s.deleteOrg(ctx, sc, id, at, audit)
	}
	table := map[intake.DeleteKind]string{intake.DeleteConnection: "connections", intake.DeleteEndpoint: "endpoints",
		intake.DeleteConsumer: "consumers"}[kind]
	if table == "" {
		return intake.Errorf(intake.EINVALID, "cannot delete a %q", kind)
	}
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET deleted_at = ? WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?)`,
			ts(at), id, sc.OrgID, sc.OrgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(string(kind), id)
		}
		tx.announce()
		if kind == intake.DeleteConnection {
			_, err = tx.ExecContext(ctx, `UPDATE endpoints SET deleted_at = ? WHERE deleted_at IS NULL AND connection_id = ?`, ts(at), id)
		}
		return err
	})
}

// deleteOrg soft-deletes an org and what it configured, so that every read
// that ignores deleted rows (ingress's token lookup among them) ignores
// them too; its messages, events and audit stay.
func (s *Store) deleteOrg(ctx context.Context, sc intake.Scope, id string, at time.Time, audit []intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE orgs SET deleted_at = ?, version = version + 1 WHERE deleted_at IS NULL AND id = ? AND (? = '' OR id = ?)`,
			ts(at), id, sc.OrgID, sc.OrgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("org", id)
		}
		tx.announce()
		for _, table := range []string{"connections", "endpoints", "consumers"} {
			if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET deleted_at = ? WHERE deleted_at IS NULL AND org_id = ?`, ts(at), id); err != nil {
				return err
			}
		}
		return nil
	})
}

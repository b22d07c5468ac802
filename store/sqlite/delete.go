package sqlite

import (
	"context"
	"time"

	"github.com/intakehq/intake"
)

// Delete soft-deletes a connection (with its endpoints), an endpoint or a
// consumer visible in sc.
func (s *Store) Delete(ctx context.Context, sc intake.Scope, kind intake.DeleteKind, id string, at time.Time, audit ...intake.AuditEntry) error {
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

package sqlite

import (
	"context"
	"database/sql"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/keyset"
)

// RecordAudit appends an operator action.
func (s *Store) RecordAudit(ctx context.Context, a intake.AuditEntry) error {
	return s.audited(ctx, []intake.AuditEntry{a}, func(*wtx) error { return nil })
}

// audited runs fn in a write transaction and appends audit in the same
// one: an action and its audit entry commit together or not at all.
func (s *Store) audited(ctx context.Context, audit []intake.AuditEntry, fn func(*wtx) error) error {
	return s.tx(ctx, func(tx *wtx) error {
		if err := fn(tx); err != nil {
			return err
		}
		for _, a := range audit {
			if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.OrgID, a.Actor, a.Action, a.TargetType, a.TargetID, a.Detail, ts(a.At)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListAudit lists audit entries newest first, a page at a time.
func (s *Store) ListAudit(ctx context.Context, sc intake.Scope, f intake.AuditFilter) (intake.Page[intake.AuditEntry], error) {
	limit := intake.PageLimit(f.Limit)
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT id, org_id, actor, action, target_type, target_id, detail, at FROM audit_log
		WHERE (?1 = '' OR org_id = ?1) AND (?2 = '' OR id < ?2) ORDER BY id DESC LIMIT ?3`, sc.OrgID, f.Cursor, limit+1)
	if err != nil {
		return intake.Page[intake.AuditEntry]{}, err
	}
	defer rows.Close()
	var page intake.Page[intake.AuditEntry]
	for rows.Next() {
		var a intake.AuditEntry
		var at sql.NullInt64
		if err := rows.Scan(&a.ID, &a.OrgID, &a.Actor, &a.Action, &a.TargetType, &a.TargetID, &a.Detail, &at); err != nil {
			return page, err
		}
		a.At = fromTS(at)
		page.Items = append(page.Items, a)
	}
	page = keyset.Page(page.Items, limit)
	return page, rows.Err()
}

package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/store/internal/keyset"
)

// RecordAudit appends an operator action.
func (s *Store) RecordAudit(ctx context.Context, a intake.AuditEntry) error {
	return s.audited(ctx, []intake.AuditEntry{a}, func(pgx.Tx) error { return nil })
}

// audited runs fn in a transaction as the connecting role and appends
// audit in the same one: an action and its audit entry commit together or
// not at all.
func (s *Store) audited(ctx context.Context, audit []intake.AuditEntry, fn func(pgx.Tx) error) error {
	return s.auditedScoped(ctx, intake.Scope{}, audit, fn)
}

// auditedScoped is audited under sc's row-level security.
func (s *Store) auditedScoped(ctx context.Context, sc intake.Scope, audit []intake.AuditEntry, fn func(pgx.Tx) error) error {
	return s.scopedTx(ctx, sc, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		for _, a := range audit {
			if _, err := tx.Exec(ctx, `INSERT INTO audit_log (id, org_id, actor, action, target_type, target_id, detail, at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				a.ID, nullID(a.OrgID), text(a.Actor), text(a.Action), text(a.TargetType), text(a.TargetID), text(a.Detail), ts(a.At)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListAudit lists audit entries newest first, a page at a time.
func (s *Store) ListAudit(ctx context.Context, sc intake.Scope, f intake.AuditFilter) (intake.Page[intake.AuditEntry], error) {
	var page intake.Page[intake.AuditEntry]
	if f.Cursor != "" && !validIDs(f.Cursor) {
		return page, intake.Errorf(intake.EINVALID, "malformed cursor")
	}
	limit := intake.PageLimit(f.Limit)
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &page.Items, scanAudit, `SELECT id, org_id, actor, action, target_type, target_id, detail, at FROM audit_log
			WHERE ($1::uuid IS NULL OR org_id = $1) AND ($2::uuid IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
			nullID(sc.OrgID), nullID(f.Cursor), limit+1)
	})
	page = keyset.Page(page.Items, limit)
	return page, err
}

func scanAudit(row pgx.Row) (intake.AuditEntry, error) {
	var a intake.AuditEntry
	var org *string
	var at *time.Time
	err := row.Scan(&a.ID, &org, &a.Actor, &a.Action, &a.TargetType, &a.TargetID, &a.Detail, &at)
	a.OrgID, a.At = fromID(org), fromTS(at)
	return a, err
}

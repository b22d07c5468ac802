package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// CreateSession records a console sign-in with its audit entries. A
// person's session has no key: its key_hash is empty. Sessions are looked
// up before any scope is known, so they are written and read as the owning
// role.
func (s *Store) CreateSession(ctx context.Context, cs intake.ConsoleSession, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO console_sessions (id_hash, org_id, key_hash, subject, email, role, actor, csrf, created_at, expires_at)
			VALUES ($1, $2, coalesce($3, ''::bytea), $4, $5, $6, $7, $8, $9, $10)`, cs.IDHash, nullID(cs.OrgID), cs.KeyHash,
			text(cs.Subject), text(cs.Email), string(cs.Role), text(cs.Actor), cs.CSRF, ts(cs.CreatedAt), ts(cs.ExpiresAt))
		return err
	})
}

// SessionByHash finds a live session; an org's works only while the org is
// not deleted and, when it was signed in with an API key, that key is
// unrevoked.
func (s *Store) SessionByHash(ctx context.Context, idHash []byte, now time.Time) (intake.ConsoleSession, error) {
	cs := intake.ConsoleSession{IDHash: idHash}
	var org *string
	var created, expires *time.Time
	err := s.poolFor(ctx).QueryRow(ctx, `SELECT s.org_id, coalesce(o.name, ''), s.key_hash, s.subject, s.email, s.role, s.actor, s.csrf,
		       s.created_at, s.expires_at
		FROM console_sessions s LEFT JOIN orgs o ON o.id = s.org_id
		WHERE s.id_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2
		  AND (s.org_id IS NULL OR o.deleted_at IS NULL AND (s.subject <> '' OR EXISTS (SELECT 1 FROM api_keys k
		       WHERE k.key_hash = s.key_hash AND k.org_id = s.org_id AND k.revoked_at IS NULL)))`, idHash, ts(now)).
		Scan(&org, &cs.OrgName, &cs.KeyHash, &cs.Subject, &cs.Email, &cs.Role, &cs.Actor, &cs.CSRF, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return cs, intake.Errorf(intake.ENOTFOUND, "no such session")
	}
	cs.OrgID, cs.CreatedAt, cs.ExpiresAt = fromID(org), fromTS(created), fromTS(expires)
	return cs, classify(err)
}

// RevokeSession ends a session; revoking it again changes nothing.
func (s *Store) RevokeSession(ctx context.Context, idHash []byte, at time.Time, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE console_sessions SET revoked_at = coalesce(revoked_at, $1) WHERE id_hash = $2`, ts(at), idHash)
		if err == nil && tag.RowsAffected() == 0 {
			return intake.Errorf(intake.ENOTFOUND, "no such session")
		}
		return err
	})
}

// DeleteExpiredSessions deletes up to limit expired sessions, oldest first.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
		SELECT id_hash FROM console_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, ts(now), limit)
	return int(tag.RowsAffected()), classify(err)
}

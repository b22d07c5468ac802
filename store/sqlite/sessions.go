package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/intakehq/intake"
)

// CreateSession records a console sign-in with its audit entries. A
// person's session has no key: its key_hash is empty.
func (s *Store) CreateSession(ctx context.Context, cs intake.ConsoleSession, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id_hash, org_id, key_hash, subject, email, role, actor, csrf, created_at, expires_at)
			VALUES (?, ?, coalesce(?, X''), ?, ?, ?, ?, ?, ?, ?)`, cs.IDHash, cs.OrgID, cs.KeyHash, cs.Subject, cs.Email, string(cs.Role),
			cs.Actor, cs.CSRF, ts(cs.CreatedAt), ts(cs.ExpiresAt))
		return err
	})
}

// SessionByHash finds a live session; an org's works only while the org is
// not deleted and, when it was signed in with an API key, that key is
// unrevoked.
func (s *Store) SessionByHash(ctx context.Context, idHash []byte, now time.Time) (intake.ConsoleSession, error) {
	cs := intake.ConsoleSession{IDHash: idHash}
	var created, expires sql.NullInt64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT s.org_id, coalesce(o.name, ''), s.key_hash, s.subject, s.email, s.role, s.actor, s.csrf,
		       s.created_at, s.expires_at
		FROM console_sessions s LEFT JOIN orgs o ON o.id = s.org_id
		WHERE s.id_hash = ?1 AND s.revoked_at IS NULL AND s.expires_at > ?2
		  AND (s.org_id = '' OR o.deleted_at IS NULL AND (s.subject <> '' OR EXISTS (SELECT 1 FROM api_keys k
		       WHERE k.key_hash = s.key_hash AND k.org_id = s.org_id AND k.revoked_at IS NULL)))`, idHash, ts(now)).
		Scan(&cs.OrgID, &cs.OrgName, &cs.KeyHash, &cs.Subject, &cs.Email, &cs.Role, &cs.Actor, &cs.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return cs, intake.Errorf(intake.ENOTFOUND, "no such session")
	}
	cs.CreatedAt, cs.ExpiresAt = fromTS(created), fromTS(expires)
	return cs, classify(err)
}

// RevokeSession ends a session; revoking it again changes nothing.
func (s *Store) RevokeSession(ctx context.Context, idHash []byte, at time.Time, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE console_sessions SET revoked_at = coalesce(revoked_at, ?) WHERE id_hash = ?`, ts(at), idHash)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = intake.Errorf(intake.ENOTFOUND, "no such session")
		}
		return err
	})
}

// DeleteExpiredSessions deletes up to limit expired sessions, oldest first.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
			SELECT id_hash FROM console_sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, ts(now), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

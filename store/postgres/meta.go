package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// keyFingerprint is the meta row holding the master key's fingerprint.
const keyFingerprint = "master_key_fingerprint"

// KeyFingerprint is the fingerprint of the master key the store's secrets
// are sealed with; "" before one is recorded.
func (s *Store) KeyFingerprint(ctx context.Context) (string, error) {
	var fp string
	err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE name = $1`, keyFingerprint).Scan(&fp)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return fp, classify(err)
}

// RecordKeyFingerprint records fp unless a fingerprint is recorded already
// (by this process or one starting beside it), and returns the one the
// store holds.
func (s *Store) RecordKeyFingerprint(ctx context.Context, fp string) (string, error) {
	var held string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
			keyFingerprint, fp); err != nil {
			return err
		}
		// A statement of its own: its snapshot sees a row another process
		// committed while the insert waited on it.
		return tx.QueryRow(ctx, `SELECT value FROM meta WHERE name = $1`, keyFingerprint).Scan(&held)
	})
	return held, err
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// keyFingerprint is the meta row holding the master key's fingerprint.
const keyFingerprint = "master_key_fingerprint"

// storeID is the meta row holding the store's identity.
const storeID = "store_id"

// ID is the store's identity, made when it was first opened and kept by a
// restore: a replica holds one store, and tells it by this.
func (s *Store) ID(ctx context.Context) (string, error) {
	var id string
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ?`, storeID).Scan(&id)
	return id, classify(err)
}

// Fork gives the store a new identity and returns it: a store restored to
// an earlier time is no longer the one its replica goes on holding, and
// must not continue it.
func (s *Store) Fork(ctx context.Context) (string, error) {
	var id string
	err := s.tx(ctx, func(tx *wtx) error {
		return tx.QueryRowContext(ctx, `UPDATE meta SET value = lower(hex(randomblob(16))) WHERE name = ? RETURNING value`, storeID).Scan(&id)
	})
	return id, err
}

// KeyFingerprint is the fingerprint of the master key the store's secrets
// are sealed with; "" before one is recorded.
func (s *Store) KeyFingerprint(ctx context.Context) (string, error) {
	var fp string
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ?`, keyFingerprint).Scan(&fp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return fp, classify(err)
}

// RecordKeyFingerprint records fp unless a fingerprint is recorded already,
// and returns the one the store holds.
func (s *Store) RecordKeyFingerprint(ctx context.Context, fp string) (string, error) {
	var held string
	err := s.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			keyFingerprint, fp); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ?`, keyFingerprint).Scan(&held)
	})
	return held, err
}

// bodyLocation is the meta row holding where the store's bodies above the
// blob threshold are kept.
const bodyLocation = "body_location"

// BodyLocation is where the store's bodies above the blob threshold are
// kept, as a --blob-store URL, recorded by RecordBodyLocation; "" before
// one is recorded. It travels with the store into its replica and out of
// it by a restore: a store restored to an earlier time replicates to a
// new place, while its bodies stay where they were written.
func (s *Store) BodyLocation(ctx context.Context) (string, error) {
	var u string
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ?`, bodyLocation).Scan(&u)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return u, classify(err)
}

// RecordBodyLocation records u as where the store's large bodies are kept.
func (s *Store) RecordBodyLocation(ctx context.Context, u string) error {
	return s.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
			bodyLocation, u)
		return err
	})
}

package seal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/intakehq/intake"
)

// fingerprintLabel separates the fingerprint's hash from any other use of
// the key.
const fingerprintLabel = "intake master key fingerprint v1\x00"

// Fingerprint names a master key without revealing it: the first 8 bytes,
// in hex, of SHA-256 over a label and the key. Safe to log and to show.
func Fingerprint(key []byte) string {
	sum := sha256.Sum256(append([]byte(fingerprintLabel), key...))
	return hex.EncodeToString(sum[:8])
}

// Fingerprint is the fingerprint of the Sealer's master key.
func (s *Sealer) Fingerprint() string { return s.fingerprint }

// KeyStore is what CheckStore needs of a store.
type KeyStore interface {
	KeyFingerprint(ctx context.Context) (string, error)
	RecordKeyFingerprint(ctx context.Context, fp string) (string, error)
	ListConnections(ctx context.Context, sc intake.Scope) ([]intake.Connection, error)
}

// WrongKeyError is a master key other than the one the store's secrets are
// sealed with: a configuration error, for the process to exit on.
type WrongKeyError struct {
	Store   string // the store's recorded fingerprint; "" when none was recorded
	Process string // this process's key's fingerprint
}

func (e *WrongKeyError) Error() string {
	if e.Store == "" {
		return fmt.Sprintf("the store's sealed secrets do not open with this process's master key (fingerprint %s), "+
			"and the store has no fingerprint recorded; start it with the key that sealed them", e.Process)
	}
	return fmt.Sprintf("the store's secrets are sealed with the master key of fingerprint %s, but this process's key "+
		"has fingerprint %s; start it with the store's key", e.Store, e.Process)
}

// CheckStore makes sure the store's secrets are sealed with this Sealer's
// key, before a process serves. A store with no fingerprint yet gets this
// key's, once a sealed secret it already holds (from a version that
// recorded none) is proven to open with it.
func (s *Sealer) CheckStore(ctx context.Context, st KeyStore) error {
	held, err := st.KeyFingerprint(ctx)
	if err != nil {
		return err
	}
	if held == "" {
		conns, err := st.ListConnections(ctx, intake.Scope{})
		if err != nil {
			return err
		}
		for _, c := range conns {
			if len(c.SealedSecrets) == 0 {
				continue
			}
			if _, err := s.ConnectionSecrets(c); err != nil {
				return &WrongKeyError{Process: s.fingerprint}
			}
			break
		}
		if held, err = st.RecordKeyFingerprint(ctx, s.fingerprint); err != nil {
			return err
		}
	}
	if held != s.fingerprint {
		return &WrongKeyError{Store: held, Process: s.fingerprint}
	}
	return nil
}

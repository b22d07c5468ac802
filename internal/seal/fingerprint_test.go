package seal_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/seal"
	"github.com/intakehq/intake/store/sqlite"
)

func TestAFingerprintNamesTheKeyWithoutRevealingIt(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, seal.KeySize), bytes.Repeat([]byte{2}, seal.KeySize)
	fp := seal.Fingerprint(k1)
	if len(fp) != 16 || fp != seal.Fingerprint(k1) {
		t.Fatalf("fingerprint %q is not 8 stable bytes of hex", fp)
	}
	if fp == seal.Fingerprint(k2) {
		t.Fatal("two keys share a fingerprint")
	}
	if strings.Contains(hex.EncodeToString(k1), fp) {
		t.Fatal("the fingerprint is a piece of the key")
	}
	s, _ := seal.New(k1)
	if s.Fingerprint() != fp {
		t.Fatalf("the sealer's fingerprint %q differs from its key's %q", s.Fingerprint(), fp)
	}
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestAStoreRecordsTheFirstKeyAndRefusesAnother(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	first, _ := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	other, _ := seal.New(bytes.Repeat([]byte{2}, seal.KeySize))
	if err := first.CheckStore(ctx, st); err != nil {
		t.Fatalf("a new store refused the first key: %v", err)
	}
	if fp, _ := st.KeyFingerprint(ctx); fp != first.Fingerprint() {
		t.Fatalf("recorded %q, want %q", fp, first.Fingerprint())
	}
	if err := first.CheckStore(ctx, st); err != nil {
		t.Fatalf("the same key again: %v", err)
	}
	err := other.CheckStore(ctx, st)
	var wrong *seal.WrongKeyError
	if !errors.As(err, &wrong) || wrong.Store != first.Fingerprint() || wrong.Process != other.Fingerprint() {
		t.Fatalf("another key: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, first.Fingerprint()) || !strings.Contains(msg, other.Fingerprint()) {
		t.Fatalf("the error does not name both fingerprints: %s", msg)
	}
}

func TestAStoreWithoutAFingerprintRecordsOnlyAKeyThatOpensItsSecrets(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sealer, _ := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	other, _ := seal.New(bytes.Repeat([]byte{2}, seal.KeySize))
	// A connection created by a version that recorded no fingerprint.
	org := intake.Org{ID: intake.NewID(), Name: "acme", CreatedAt: time.Now()}
	if err := st.CreateOrg(ctx, org, intake.APIKey{ID: intake.NewID(), Prefix: "ik_test", Hash: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	conn := intake.Connection{ID: intake.NewID(), OrgID: org.ID, Provider: "stripe", Name: "live", CreatedAt: time.Now()}
	conn.SealedSecrets, _ = sealer.SealConnectionSecrets(conn, []string{"whsec_1"})
	if err := st.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}

	err := other.CheckStore(ctx, st)
	var wrong *seal.WrongKeyError
	if !errors.As(err, &wrong) || wrong.Store != "" || !strings.Contains(err.Error(), other.Fingerprint()) {
		t.Fatalf("a key that cannot open the secrets: %v", err)
	}
	if fp, _ := st.KeyFingerprint(ctx); fp != "" {
		t.Fatalf("the refused key's fingerprint %q was recorded", fp)
	}
	if err := sealer.CheckStore(ctx, st); err != nil {
		t.Fatalf("the key that sealed them: %v", err)
	}
	if fp, _ := st.KeyFingerprint(ctx); fp != sealer.Fingerprint() {
		t.Fatalf("recorded %q, want %q", fp, sealer.Fingerprint())
	}
}

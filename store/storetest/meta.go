package storetest

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// testKeyFingerprint: the first fingerprint recorded stays; a later one
// is not recorded over it, and the caller learns which one the store holds.
func testKeyFingerprint(t *testing.T, s intake.Store) {
	ctx := context.Background()
	if fp, err := s.KeyFingerprint(ctx); err != nil || fp != "" {
		t.Fatalf("a new store's fingerprint = %q, %v; want none", fp, err)
	}
	if held, err := s.RecordKeyFingerprint(ctx, "0123456789abcdef"); err != nil || held != "0123456789abcdef" {
		t.Fatalf("recording the first = %q, %v", held, err)
	}
	if held, err := s.RecordKeyFingerprint(ctx, "fedcba9876543210"); err != nil || held != "0123456789abcdef" {
		t.Fatalf("recording another = %q, %v; want the first kept", held, err)
	}
	if fp, err := s.KeyFingerprint(ctx); err != nil || fp != "0123456789abcdef" {
		t.Fatalf("fingerprint = %q, %v", fp, err)
	}
}

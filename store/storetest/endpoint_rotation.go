package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// testEndpointRotation: a rotation saves the new token and the replaced
// one with its expiry, over the version read; ingress finds the endpoint
// by either hash, and a second rotation leaves the oldest finding nothing.
func testEndpointRotation(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	ep, err := s.Endpoint(ctx, sc, f.ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	first := ep.TokenHash
	second, third := []byte("second-"+f.org.ID), []byte("third-"+f.org.ID)
	rotated, err := ep.RotateToken(second, []byte("sealed-second"), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RotateEndpointToken(ctx, sc, rotated); err != nil {
		t.Fatal(err)
	}
	got, err := s.Endpoint(ctx, sc, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.TokenHash, second) || !bytes.Equal(got.SealedToken, []byte("sealed-second")) ||
		!bytes.Equal(got.PreviousTokenHash, first) || !bytes.Equal(got.PreviousSealedToken, ep.SealedToken) || !got.PreviousExpiresAt.Equal(t0.Add(time.Hour)) || got.Version != ep.Version+1 {
		t.Fatalf("rotated = %+v", got)
	}
	for _, h := range [][]byte{first, second} {
		byToken, err := s.EndpointByTokenHash(ctx, h)
		if err != nil || byToken.ID != ep.ID || !byToken.AddressedBy(h, t0) {
			t.Fatalf("by token %q = %+v %v", h, byToken, err)
		}
	}
	// Over a version already passed, nothing is written.
	stale, _ := ep.RotateToken(third, nil, t0, time.Hour)
	if err := s.RotateEndpointToken(ctx, sc, stale); intake.ErrorCode(err) != intake.EVERSION {
		t.Fatalf("a rotation over a stale version: %v, want a version error", err)
	}
	// Another org's scope does not reach it.
	other := newFixture(t, s, "other")
	again, _ := got.RotateToken(third, nil, t0.Add(time.Minute), time.Hour)
	if err := s.RotateEndpointToken(ctx, intake.Scope{OrgID: other.org.ID}, again); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("another org rotated it: %v, want not found", err)
	}
	if err := s.RotateEndpointToken(ctx, sc, again); err != nil {
		t.Fatal(err)
	}
	_, err = s.EndpointByTokenHash(ctx, first)
	wantCode(t, err, intake.ENOTFOUND)
	for _, h := range [][]byte{second, third} {
		if byToken, err := s.EndpointByTokenHash(ctx, h); err != nil || byToken.ID != ep.ID {
			t.Fatalf("by token %q after the second rotation = %+v %v", h, byToken, err)
		}
	}
}

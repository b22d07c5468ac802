package storetest

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func session(orgID string, keyHash []byte, name string, expires time.Time) intake.ConsoleSession {
	id := sha256.Sum256([]byte("cookie " + name))
	return intake.ConsoleSession{IDHash: id[:], OrgID: orgID, KeyHash: keyHash, Actor: "actor " + name, CSRF: "csrf " + name,
		CreatedAt: t0, ExpiresAt: expires}
}

func testSessions(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a := newFixture(t, s, "a")
	org := session(a.org.ID, []byte("key-"+a.org.ID), "org", t0.Add(time.Hour))
	staff := session("", []byte("staff token hash"), "staff", t0.Add(2*time.Hour))
	for _, cs := range []intake.ConsoleSession{org, staff} {
		if err := s.CreateSession(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SessionByHash(ctx, org.IDHash, t0)
	want := org
	want.OrgName = "a"
	if err != nil || got.OrgID != want.OrgID || got.OrgName != "a" || string(got.KeyHash) != string(want.KeyHash) ||
		got.Actor != want.Actor || got.CSRF != want.CSRF || !got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("org session = %+v %v, want %+v", got, err, want)
	}
	if got, err := s.SessionByHash(ctx, staff.IDHash, t0); err != nil || got.OrgID != "" || got.OrgName != "" || got.Actor != staff.Actor {
		t.Fatalf("staff session = %+v %v", got, err)
	}
	other := sha256.Sum256([]byte("a cookie never issued"))
	_, err = s.SessionByHash(ctx, other[:], t0)
	wantCode(t, err, intake.ENOTFOUND)

	// Expiry: valid up to the instant before, gone at it.
	if _, err := s.SessionByHash(ctx, org.IDHash, org.ExpiresAt.Add(-time.Microsecond)); err != nil {
		t.Fatalf("a session before its expiry: %v", err)
	}
	_, err = s.SessionByHash(ctx, org.IDHash, org.ExpiresAt)
	wantCode(t, err, intake.ENOTFOUND)

	// Sign-out ends it; a second sign-out changes nothing; an unknown one is
	// not found.
	if err := s.RevokeSession(ctx, staff.IDHash, t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, staff.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)
	if err := s.RevokeSession(ctx, staff.IDHash, t0.Add(time.Minute)); err != nil {
		t.Fatalf("a second sign-out: %v", err)
	}
	wantCode(t, s.RevokeSession(ctx, other[:], t0), intake.ENOTFOUND)

	// Revoking the API key ends the sessions signed in with it, and only
	// those.
	k := intake.APIKey{ID: intake.NewID(), OrgID: a.org.ID, Prefix: "ik_second", Hash: []byte("second-" + a.org.ID), CreatedAt: t0}
	if err := s.CreateAPIKey(ctx, intake.Scope{OrgID: a.org.ID}, k); err != nil {
		t.Fatal(err)
	}
	second := session(a.org.ID, k.Hash, "second", t0.Add(time.Hour))
	if err := s.CreateSession(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIKey(ctx, intake.Scope{OrgID: a.org.ID}, k.ID, t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, second.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)
	if _, err := s.SessionByHash(ctx, org.IDHash, t0); err != nil {
		t.Fatalf("the first key's session ended too: %v", err)
	}
	// A session names its org: another org's key does not carry it.
	b := newFixture(t, s, "b")
	crossed := session(a.org.ID, []byte("key-"+b.org.ID), "crossed", t0.Add(time.Hour))
	if err := s.CreateSession(ctx, crossed); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, crossed.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)

	// The sweep deletes expired sessions, a batch at a time, revoked or not.
	if n, err := s.DeleteExpiredSessions(ctx, t0.Add(90*time.Minute), 2); err != nil || n != 2 {
		t.Fatalf("swept %d (%v), want a batch of 2 of the 3 expired", n, err)
	}
	if n, err := s.DeleteExpiredSessions(ctx, t0.Add(90*time.Minute), 2); err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want the last expired one", n, err)
	}
	if n, err := s.DeleteExpiredSessions(ctx, t0.Add(3*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want the revoked staff session once it expired", n, err)
	}
	wantCode(t, s.RevokeSession(ctx, org.IDHash, t0), intake.ENOTFOUND)
}

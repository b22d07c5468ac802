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

// testPeopleSessions: a person signed in with single sign-on holds no key;
// the session names them, keeps their role, commits with its audit entry,
// and ends with its org.
func testPeopleSessions(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "a"), newFixture(t, s, "b")
	alice := session(a.org.ID, nil, "alice", t0.Add(time.Hour))
	alice.Subject, alice.Email, alice.Role, alice.Actor = "248289761001", "alice@example.com", intake.RoleOperator, "person:alice@example.com"
	signIn := intake.AuditEntry{ID: intake.NewID(), OrgID: a.org.ID, Actor: alice.Actor, Action: "session.sign_in",
		TargetType: "person", TargetID: alice.Subject, Detail: "email=alice@example.com role=operator", At: t0}
	if err := s.CreateSession(ctx, alice, signIn); err != nil {
		t.Fatal(err)
	}
	got, err := s.SessionByHash(ctx, alice.IDHash, t0)
	if err != nil || got.OrgID != a.org.ID || got.OrgName != "a" || len(got.KeyHash) != 0 || got.Subject != alice.Subject ||
		got.Email != alice.Email || got.Role != intake.RoleOperator || got.Actor != alice.Actor || got.CSRF != alice.CSRF {
		t.Fatalf("person session = %+v %v, want %+v", got, err, alice)
	}
	audit, err := s.ListAudit(ctx, intake.Scope{OrgID: a.org.ID}, intake.AuditFilter{Limit: 10})
	if err != nil || len(audit.Items) != 1 || audit.Items[0].Action != "session.sign_in" || audit.Items[0].TargetID != alice.Subject ||
		audit.Items[0].Actor != alice.Actor {
		t.Fatalf("a's audit = %+v %v, want the sign-in", audit.Items, err)
	}

	// A staff person: no org, no key, no role.
	root := session("", nil, "root", t0.Add(time.Hour))
	root.Subject, root.Actor = "root-subject", "person:root-subject"
	if err := s.CreateSession(ctx, root); err != nil {
		t.Fatal(err)
	}
	if got, err := s.SessionByHash(ctx, root.IDHash, t0); err != nil || got.OrgID != "" || got.Subject != "root-subject" ||
		got.Email != "" || got.Role != "" || len(got.KeyHash) != 0 {
		t.Fatalf("staff person session = %+v %v", got, err)
	}

	// A token's session with an empty key is not a person's: it needs its
	// key like any other.
	keyless := session(b.org.ID, nil, "keyless", t0.Add(time.Hour))
	if err := s.CreateSession(ctx, keyless); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, keyless.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)

	// Revoking every key of the org leaves the person signed in; deleting
	// the org signs them out; expiry and sign-out hold as for tokens.
	keys, err := s.ListAPIKeys(ctx, intake.Scope{OrgID: a.org.ID})
	if err != nil || len(keys) != 1 {
		t.Fatalf("a's keys = %+v %v", keys, err)
	}
	if err := s.RevokeAPIKey(ctx, intake.Scope{OrgID: a.org.ID}, keys[0].ID, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, alice.IDHash, t0); err != nil {
		t.Fatalf("a person's session ended with a key it never held: %v", err)
	}
	_, err = s.SessionByHash(ctx, alice.IDHash, alice.ExpiresAt)
	wantCode(t, err, intake.ENOTFOUND)
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteOrg, a.org.ID, t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, alice.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)
	if err := s.RevokeSession(ctx, root.IDHash, t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, root.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)

	// The session and its audit entry commit together or neither: a second
	// session under the same cookie hash is refused, and so is its entry.
	again := intake.AuditEntry{ID: intake.NewID(), OrgID: b.org.ID, Actor: "person:x", Action: "session.sign_in", TargetType: "person",
		TargetID: "x", At: t0}
	dup := session(b.org.ID, nil, "root", t0.Add(time.Hour))
	dup.Subject, dup.Actor = "x", "person:x"
	if err := s.CreateSession(ctx, dup, again); err == nil {
		t.Fatal("a second session under one cookie hash was recorded")
	}
	if audit, err := s.ListAudit(ctx, intake.Scope{OrgID: b.org.ID}, intake.AuditFilter{Limit: 10}); err != nil || len(audit.Items) != 0 {
		t.Fatalf("b's audit = %+v %v, want nothing of the refused sign-in", audit.Items, err)
	}

	// A sign-out and its audit entry commit together or neither: one of an
	// unknown session is refused, and so is its entry.
	bob := session(b.org.ID, nil, "bob", t0.Add(time.Hour))
	bob.Subject, bob.Actor = "bob", "person:bob"
	if err := s.CreateSession(ctx, bob); err != nil {
		t.Fatal(err)
	}
	out := intake.AuditEntry{ID: intake.NewID(), OrgID: b.org.ID, Actor: bob.Actor, Action: "session.sign_out", TargetType: "person",
		TargetID: "bob", At: t0}
	if err := s.RevokeSession(ctx, bob.IDHash, t0, out); err != nil {
		t.Fatal(err)
	}
	_, err = s.SessionByHash(ctx, bob.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)
	var unknown [32]byte
	stray := out
	stray.ID = intake.NewID()
	wantCode(t, s.RevokeSession(ctx, unknown[:], t0, stray), intake.ENOTFOUND)
	if audit, err := s.ListAudit(ctx, intake.Scope{OrgID: b.org.ID}, intake.AuditFilter{Limit: 10}); err != nil || len(audit.Items) != 1 ||
		audit.Items[0].ID != out.ID {
		t.Fatalf("b's audit = %+v %v, want the sign-out alone", audit.Items, err)
	}
}

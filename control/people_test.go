package control_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
)

// A person's groups decide where they sign in: staff above all, else the
// first org of the map that exists, with the highest role their groups give
// there; the session commits with an audit entry naming them. Someone the
// map gives nothing gets no session and leaves no entry.
func TestSignInPersonGivesTheMappedOrgAndRoleAndAuditsThePerson(t *testing.T) {
	ctx := context.Background()
	s := testkit.SQLite(t)
	sealer := testkit.Sealer(t)
	people := intake.PeopleMap{
		{Group: "gone", Org: "initech", Role: intake.RoleAdmin},
		{Group: "acme-ops", Org: "acme", Role: intake.RoleOperator},
		{Group: "acme-view", Org: "acme", Role: intake.RoleViewer},
		{Group: "globex", Org: "globex", Role: intake.RoleAdmin},
		{Group: "root", Staff: true},
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ctl := control.New(control.Config{Store: s, Sealer: sealer, People: people, Clock: testkit.NewClock(now)})
	staff := control.Caller{Actor: "staff"}
	acme, _, err := ctl.CreateOrg(ctx, staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ctl.CreateOrg(ctx, staff, "globex"); err != nil {
		t.Fatal(err)
	}
	session := func(name string) intake.ConsoleSession {
		id := sha256.Sum256([]byte(name))
		return intake.ConsoleSession{IDHash: id[:], CSRF: "csrf", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}

	alice := intake.Person{Subject: "248289761001", Email: "alice@example.com", Groups: []string{"globex", "acme-view", "gone", "acme-ops"}}
	c, err := ctl.SignInPerson(ctx, alice, session("alice"))
	if err != nil || c.Scope.OrgID != acme.ID || c.OrgName != "acme" || c.Role != intake.RoleOperator || c.Actor != "person:alice@example.com" {
		t.Fatalf("alice signs in as %+v %v, want acme's operator", c, err)
	}
	row, err := s.SessionByHash(ctx, session("alice").IDHash, now)
	if err != nil || row.OrgID != acme.ID || row.Role != intake.RoleOperator || row.Subject != alice.Subject || row.Email != alice.Email ||
		len(row.KeyHash) != 0 {
		t.Fatalf("alice's session = %+v %v", row, err)
	}
	audit, err := ctl.Audit(ctx, staff, intake.AuditFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var signIns []intake.AuditEntry
	for _, a := range audit.Items {
		if a.Action == "session.sign_in" {
			signIns = append(signIns, a)
		}
	}
	if len(signIns) != 1 || signIns[0].OrgID != acme.ID || signIns[0].Actor != "person:alice@example.com" || signIns[0].TargetID != alice.Subject ||
		signIns[0].Detail != "sub=248289761001 email=alice@example.com role=operator" {
		t.Fatalf("sign-in audit = %+v", signIns)
	}

	root := intake.Person{Subject: "root-1", Groups: []string{"acme-ops", "root"}}
	if c, err := ctl.SignInPerson(ctx, root, session("root")); err != nil || !c.Staff() || c.Role != "" || c.Actor != "person:root-1" {
		t.Fatalf("root signs in as %+v %v, want staff", c, err)
	}

	for _, nobody := range []intake.Person{
		{Subject: "bob", Email: "bob@example.com", Groups: []string{"unmapped"}},
		{Subject: "carol", Groups: []string{"gone"}}, // mapped to an org that does not exist
		{Subject: "", Groups: []string{"root"}},      // nobody the audit could name
	} {
		_, err := ctl.SignInPerson(ctx, nobody, session(nobody.Subject))
		if code := intake.ErrorCode(err); code != intake.EFORBIDDEN && code != intake.EUNAUTHORIZED {
			t.Errorf("%q signs in: %v, want a refusal", nobody.Subject, err)
		}
		if _, err := s.SessionByHash(ctx, session(nobody.Subject).IDHash, now); intake.ErrorCode(err) != intake.ENOTFOUND {
			t.Errorf("%q has a session after a refusal: %v", nobody.Subject, err)
		}
	}
	if audit, _ := ctl.Audit(ctx, staff, intake.AuditFilter{Limit: 20}); len(audit.Items) != 4 {
		t.Errorf("audit has %d entries, want the two orgs and two sign-ins", len(audit.Items))
	}
}

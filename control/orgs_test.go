package control_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/internal/testkit"
	"github.com/intakehq/intake/store/sqlite"
)

// An org's own retention stays within the server's: a tenant cannot make
// the server keep its bodies or rows longer than the operator chose,
// whether it asks through the API, the console or a document.
func TestAnOrgsRetentionAboveTheServersIsRefusedNamingTheMaximum(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "intake.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sealer := testkit.Sealer(t)
	ctl := control.New(control.Config{Store: s, Sealer: sealer, MaxBodyRetention: 168 * time.Hour, MaxRetention: 720 * time.Hour})
	staff := control.Caller{Actor: "staff"}
	org, _, err := ctl.CreateOrg(ctx, staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	key := control.Caller{Scope: intake.Scope{OrgID: org.ID}, Actor: "key:ik_test", OrgName: "acme", Role: intake.RoleAdmin}
	str := func(s string) *string { return &s }

	for _, c := range []struct {
		u    control.OrgUpdate
		want string
	}{
		{control.OrgUpdate{Retention: str("9600h")}, "retention must be between 1h and 720h (the server's maximum)"},
		{control.OrgUpdate{Retention: str("721h")}, "720h"},
		{control.OrgUpdate{BodyRetention: str("169h")}, "body_retention must be between 1h and 168h (the server's maximum)"},
	} {
		for _, who := range []control.Caller{key, staff} {
			_, err := ctl.UpdateOrg(ctx, who, org.ID, c.u)
			if intake.ErrorCode(err) != intake.EINVALID || !strings.Contains(intake.ErrorMessage(err), c.want) {
				t.Errorf("%s: %v, want EINVALID naming %q", who.Actor, err, c.want)
			}
		}
	}
	o, err := ctl.UpdateOrg(ctx, key, org.ID, control.OrgUpdate{Retention: str("720h"), BodyRetention: str("168h")})
	if err != nil || o.Retention != 720*time.Hour || o.BodyRetention != 168*time.Hour {
		t.Fatalf("the server's own maximum: %+v %v", o, err)
	}

	doc := control.Document{Orgs: []control.OrgSpec{{Name: "acme", Retention: "9600h"}}}
	if _, err := ctl.Apply(ctx, staff, doc, control.ApplyOptions{}); intake.ErrorCode(err) != intake.EINVALID ||
		!strings.Contains(intake.ErrorMessage(err), "retention of org acme must be between 1h and 720h") {
		t.Fatalf("apply: %v, want EINVALID naming the maximum", err)
	}
}

// Renaming and deleting an org is the staff's: an org's key may do
// neither. A name is checked in one place: empty, overlong and taken names
// are refused by a create and a rename alike; both are audited, the rename
// with the name it had.
func TestOnlyStaffRenameAndDeleteOrgsAndTakenNamesAreConflicts(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	acme, _, err := e.ctl.CreateOrg(ctx, e.staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.ctl.CreateOrg(ctx, e.staff, "beta"); err != nil {
		t.Fatal(err)
	}
	key := control.Caller{Scope: intake.Scope{OrgID: acme.ID}, Actor: "key:ik_test", OrgName: "acme", Role: intake.RoleAdmin}
	name := func(s string) control.OrgUpdate { return control.OrgUpdate{Name: &s} }

	if _, err := e.ctl.UpdateOrg(ctx, key, acme.ID, name("mine")); intake.ErrorCode(err) != intake.EFORBIDDEN {
		t.Fatalf("an org key renaming its org: %v, want EFORBIDDEN", err)
	}
	if _, err := e.ctl.DeleteOrg(ctx, key, acme.ID); intake.ErrorCode(err) != intake.EFORBIDDEN {
		t.Fatalf("an org key deleting its org: %v, want EFORBIDDEN", err)
	}
	for _, c := range []struct{ name, code string }{
		{"beta", intake.ECONFLICT}, {"", intake.EINVALID}, {strings.Repeat("x", 201), intake.EINVALID},
	} {
		if _, err := e.ctl.UpdateOrg(ctx, e.staff, acme.ID, name(c.name)); intake.ErrorCode(err) != c.code {
			t.Errorf("rename to %.20q: %v, want %s", c.name, err, c.code)
		}
		if _, _, err := e.ctl.CreateOrg(ctx, e.staff, c.name); intake.ErrorCode(err) != c.code {
			t.Errorf("create %.20q: %v, want %s", c.name, err, c.code)
		}
	}
	if o, err := e.ctl.UpdateOrg(ctx, e.staff, acme.ID, name("acme")); err != nil || o.Version != 2 {
		t.Fatalf("renaming an org to its own name: %+v %v", o, err)
	}
	o, err := e.ctl.UpdateOrg(ctx, e.staff, acme.ID, control.OrgUpdate{Name: ptr("acme corp"), Version: 2})
	if err != nil || o.Name != "acme corp" || o.Version != 3 {
		t.Fatalf("rename over version 2: %+v %v", o, err)
	}
	if _, err := e.ctl.UpdateOrg(ctx, e.staff, acme.ID, control.OrgUpdate{Name: ptr("acme inc"), Version: 2}); intake.ErrorCode(err) != intake.EVERSION {
		t.Fatalf("rename over a stale version: %v, want EVERSION", err)
	}
	gone, err := e.ctl.DeleteOrg(ctx, e.staff, acme.ID)
	if err != nil || gone.Name != "acme corp" {
		t.Fatalf("delete: %+v %v", gone, err)
	}
	if _, err := e.ctl.DeleteOrg(ctx, e.staff, acme.ID); intake.ErrorCode(err) != intake.ENOTFOUND {
		t.Fatalf("a second delete: %v, want ENOTFOUND", err)
	}

	page, err := e.store.ListAudit(ctx, intake.Scope{}, intake.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, a := range page.Items {
		if a.TargetID == acme.ID {
			trail = append(trail, a.Action+" "+a.Detail)
		}
	}
	got := strings.Join(trail, "\n")
	for _, want := range []string{"org.delete name=acme corp", `org.update name="acme corp" body_retention=0s retention=0s (was "acme")`, "org.create name=acme"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit of the org:\n%s\nlacks %q", got, want)
		}
	}
}

// An org's key stops with its org: it authenticates no longer, so none of
// the org's rows can be read with it.
func TestADeletedOrgsKeyNoLongerAuthenticates(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	acme, key, err := e.ctl.CreateOrg(ctx, e.staff, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := e.ctl.Authenticate(ctx, "192.0.2.1", key); err != nil || c.Scope.OrgID != acme.ID {
		t.Fatalf("before the delete: %+v %v", c, err)
	}
	if _, err := e.ctl.DeleteOrg(ctx, e.staff, acme.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.Authenticate(ctx, "192.0.2.1", key); intake.ErrorCode(err) != intake.EUNAUTHORIZED {
		t.Fatalf("the deleted org's key: %v, want EUNAUTHORIZED", err)
	}
}

// apply finds an org by its name: after the org of that name is renamed or
// deleted, a document naming it makes a new org, and the next apply finds
// that one, never two.
func TestApplyByNameAfterTheOrgOfThatNameIsRenamedOrDeleted(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	doc := control.Document{Orgs: []control.OrgSpec{{Name: "acme", Retention: "720h"}}}
	first := e.apply(t, e.staff, doc, control.ApplyOptions{}).Changes[0]
	if first.Action != control.ActionCreate {
		t.Fatalf("first apply: %+v", first)
	}
	if _, err := e.ctl.UpdateOrg(ctx, e.staff, first.ID, control.OrgUpdate{Name: ptr("acme (old)")}); err != nil {
		t.Fatal(err)
	}
	second := e.apply(t, e.staff, doc, control.ApplyOptions{}).Changes[0]
	if second.Action != control.ActionCreate || second.ID == first.ID {
		t.Fatalf("apply after the rename: %+v, want a new org", second)
	}
	if _, err := e.ctl.DeleteOrg(ctx, e.staff, second.ID); err != nil {
		t.Fatal(err)
	}
	third := e.apply(t, e.staff, doc, control.ApplyOptions{}).Changes[0]
	if third.Action != control.ActionCreate || third.ID == second.ID {
		t.Fatalf("apply after the delete: %+v, want a new org", third)
	}
	plan := e.apply(t, e.staff, doc, control.ApplyOptions{})
	if !plan.Unchanged || plan.Changes[0].ID != third.ID {
		t.Fatalf("apply again: %+v, want org %s unchanged", plan, third.ID)
	}
	orgs, _ := e.store.ListOrgs(ctx, intake.Scope{})
	if len(orgs) != 2 {
		t.Fatalf("%d live orgs, want the renamed one and the last made", len(orgs))
	}
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// liveOrg reads org id as staff see it.
func liveOrg(t *testing.T, s intake.Store, id string) intake.Org {
	t.Helper()
	orgs, err := s.ListOrgs(context.Background(), intake.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range orgs {
		if o.ID == id {
			return o
		}
	}
	t.Fatalf("org %s is not listed", id)
	return intake.Org{}
}

// testOrgsAreRenamedOverTheVersionRead: an org's name and retention are
// written only over the version read, and move it; a name is unique among
// live orgs, so a create or a rename to a live org's name is ECONFLICT
// and `intake apply` never meets two orgs of one name. A deleted org's
// name is free again.
func testOrgsAreRenamedOverTheVersionRead(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "acme"), newFixture(t, s, "beta")
	read := liveOrg(t, s, a.org.ID)
	if read.Version != 1 {
		t.Fatalf("a new org: version %d, want 1", read.Version)
	}
	rename, retain := read, read
	rename.Name, retain.Retention = "acme corp", 1000
	if err := s.UpdateOrg(ctx, intake.Scope{OrgID: a.org.ID}, rename); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.UpdateOrg(ctx, intake.Scope{}, retain), intake.EVERSION)
	now := liveOrg(t, s, a.org.ID)
	if now.Version != 2 || now.Name != "acme corp" || now.Retention != 0 {
		t.Fatalf("after a rename and a stale change: %+v; want version 2, renamed, retention untouched", now)
	}
	if o, _, err := s.OrgByKeyHash(ctx, []byte("key-"+a.org.ID)); err != nil || o.Name != "acme corp" || o.Version != 2 {
		t.Fatalf("the key's org after the rename: %+v %v", o, err)
	}
	wantCode(t, s.UpdateOrg(ctx, intake.Scope{OrgID: b.org.ID}, now), intake.ENOTFOUND)
	gone := now
	gone.ID = intake.NewID()
	wantCode(t, s.UpdateOrg(ctx, intake.Scope{}, gone), intake.ENOTFOUND)

	taken := liveOrg(t, s, b.org.ID)
	taken.Name = "acme corp"
	wantCode(t, s.UpdateOrg(ctx, intake.Scope{}, taken), intake.ECONFLICT)
	if o := liveOrg(t, s, b.org.ID); o.Name != "beta" || o.Version != 1 {
		t.Fatalf("a refused rename changed the org: %+v", o)
	}
	twin := intake.Org{ID: intake.NewID(), Name: "acme corp", CreatedAt: t0}
	wantCode(t, s.CreateOrg(ctx, twin, intake.APIKey{ID: intake.NewID(), Prefix: "ik_twin", Hash: []byte("twin")}), intake.ECONFLICT)
	if orgs, _ := s.ListOrgs(ctx, intake.Scope{}); len(orgs) != 2 {
		t.Fatalf("a refused create left %d orgs, want 2", len(orgs))
	}

	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteOrg, a.org.ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateOrg(ctx, twin, intake.APIKey{ID: intake.NewID(), Prefix: "ik_twin", Hash: []byte("twin")}); err != nil {
		t.Fatalf("a deleted org's name taken again: %v", err)
	}
	taken.Name = "acme"
	if err := s.UpdateOrg(ctx, intake.Scope{}, taken); err != nil {
		t.Fatalf("renaming to a name only a deleted org had: %v", err)
	}
}

// testADeletedOrgIsGoneFromEveryRead: deleting an org (staff, or its own
// scope) hides it and everything it configured from every read at once:
// lists, its keys and console sessions, its endpoints' tokens at ingress,
// its connections and consumers; nothing new can be made in it; its
// history stays; another org is untouched.
func testADeletedOrgIsGoneFromEveryRead(t *testing.T, s intake.Store) {
	ctx := context.Background()
	a, b := newFixture(t, s, "acme"), newFixture(t, s, "beta")
	sa := intake.Scope{OrgID: a.org.ID}
	c := a.consumer(t, s, "app", intake.Controls{})
	m := a.ingest(t, s, `{"n":1}`, t0)
	cs := session(a.org.ID, []byte("key-"+a.org.ID), "acme", t0.Add(time.Hour))
	if err := s.CreateSession(ctx, cs); err != nil {
		t.Fatal(err)
	}

	wantCode(t, s.Delete(ctx, intake.Scope{OrgID: b.org.ID}, intake.DeleteOrg, a.org.ID, t0), intake.ENOTFOUND)
	if err := s.Delete(ctx, intake.Scope{}, intake.DeleteOrg, a.org.ID, t0); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Delete(ctx, intake.Scope{}, intake.DeleteOrg, a.org.ID, t0), intake.ENOTFOUND)

	if orgs, _ := s.ListOrgs(ctx, intake.Scope{}); len(orgs) != 1 || orgs[0].ID != b.org.ID {
		t.Fatalf("orgs after the delete: %+v, want beta alone", orgs)
	}
	if orgs, _ := s.ListOrgs(ctx, sa); len(orgs) != 0 {
		t.Fatalf("the deleted org in its own scope: %+v", orgs)
	}
	_, _, err := s.OrgByKeyHash(ctx, []byte("key-"+a.org.ID))
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.SessionByHash(ctx, cs.IDHash, t0)
	wantCode(t, err, intake.ENOTFOUND)
	_, err = s.EndpointByTokenHash(ctx, a.ep.TokenHash)
	wantCode(t, err, intake.ENOTFOUND)
	for _, sc := range []intake.Scope{{}, sa} {
		_, err = s.Endpoint(ctx, sc, a.ep.ID)
		wantCode(t, err, intake.ENOTFOUND)
		_, err = s.Connection(ctx, sc, a.conn.ID)
		wantCode(t, err, intake.ENOTFOUND)
		_, err = s.Consumer(ctx, sc, c.ID)
		wantCode(t, err, intake.ENOTFOUND)
	}
	if eps, _ := s.ListEndpoints(ctx, sa); len(eps) != 0 {
		t.Fatalf("the deleted org's endpoints are listed: %+v", eps)
	}
	if cns, _ := s.ListConnections(ctx, sa); len(cns) != 0 {
		t.Fatalf("the deleted org's connections are listed: %+v", cns)
	}
	if css, _ := s.ListConsumers(ctx, sa); len(css) != 0 {
		t.Fatalf("the deleted org's consumers are listed: %+v", css)
	}
	wantCode(t, s.UpdateOrg(ctx, intake.Scope{}, a.org), intake.ENOTFOUND)
	wantCode(t, s.CreateAPIKey(ctx, sa, intake.APIKey{ID: intake.NewID(), OrgID: a.org.ID, Prefix: "ik_late", Hash: []byte("late"), CreatedAt: t0}), intake.ENOTFOUND)
	wantCode(t, s.CreateConnection(ctx, intake.Connection{ID: intake.NewID(), OrgID: a.org.ID, Provider: "stripe", Name: "late", CreatedAt: t0}), intake.ENOTFOUND)

	if got, err := s.Message(ctx, intake.Scope{}, m.ID); err != nil || got.ID != m.ID {
		t.Fatalf("history lost with the org: %v", err)
	}
	if _, err := s.EndpointByTokenHash(ctx, b.ep.TokenHash); err != nil {
		t.Fatalf("another org's endpoint went too: %v", err)
	}
	if _, _, err := s.OrgByKeyHash(ctx, []byte("key-"+b.org.ID)); err != nil {
		t.Fatalf("another org's key went too: %v", err)
	}
}

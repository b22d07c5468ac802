package storetest

import (
	"context"
	"testing"

	"github.com/intakehq/intake"
)

// testKeyNames: a key's name is stored with it and listed; a key made
// without one lists "".
func testKeyNames(t *testing.T, s intake.Store) {
	ctx := context.Background()
	f := newFixture(t, s, "acme")
	sc := intake.Scope{OrgID: f.org.ID}
	named := intake.APIKey{ID: intake.NewID(), OrgID: f.org.ID, Prefix: "ik_named", Hash: []byte("named-" + f.org.ID),
		Name: "deploy bot · CI", Role: intake.RoleOperator, CreatedAt: t0}
	if err := s.CreateAPIKey(ctx, sc, named); err != nil {
		t.Fatal(err)
	}
	keys, err := s.ListAPIKeys(ctx, sc)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys = %+v %v", keys, err)
	}
	names := map[string]string{}
	for _, k := range keys {
		names[k.ID] = k.Name
	}
	if names[named.ID] != "deploy bot · CI" {
		t.Fatalf("listed names = %v", names)
	}
	for id, name := range names {
		if id != named.ID && name != "" {
			t.Fatalf("the org's first key, made without a name, lists %q", name)
		}
	}
}

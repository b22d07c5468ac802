package main

import (
	"strings"
	"testing"

	"github.com/intakehq/intake/api"
)

// TestCLIRenamesAndDeletesOrgs: `orgs create` of a name another org has is
// refused, so `apply` by that name keeps working; `orgs rename` frees the
// name; `orgs delete` stops the org's key at once and frees its name.
func TestCLIRenamesAndDeletesOrgs(t *testing.T) {
	s := newServer(t)
	acme := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))
	conn := decodeOut[api.Connection](t, s.mustRunJSON(t, acme.APIKey, "connections", "create", "--provider", "none", "--name", "open"))
	ep := decodeOut[api.Endpoint](t, s.mustRunJSON(t, acme.APIKey, "endpoints", "create", "--connection", conn.ID))
	if _, err := s.run(t, staffToken, "orgs", "create", "acme"); err == nil || !strings.Contains(err.Error(), `an org named "acme" exists already`) {
		t.Fatalf("a second `orgs create acme`: %v, want the name refused", err)
	}
	if _, err := s.run(t, acme.APIKey, "orgs", "rename", acme.ID, "mine"); err == nil || !strings.Contains(err.Error(), "staff") {
		t.Fatalf("an org key renaming: %v, want it refused", err)
	}
	renamed := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "rename", acme.ID, "acme corp"))
	if renamed.ID != acme.ID || renamed.Name != "acme corp" {
		t.Fatalf("orgs rename: %+v", renamed)
	}
	second := decodeOut[api.Org](t, s.mustRunJSON(t, staffToken, "orgs", "create", "acme"))

	if out := s.mustRun(t, staffToken, "orgs", "delete", acme.ID); out != "deleted org "+acme.ID+"\n" {
		t.Fatalf("orgs delete printed %q", out)
	}
	if _, err := s.run(t, staffToken, "orgs", "delete", acme.ID); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("deleting it again: %v, want not found", err)
	}
	if _, err := s.run(t, acme.APIKey, "endpoints", "list"); err == nil {
		t.Fatal("the deleted org's key still lists its endpoints")
	}
	if _, err := s.run(t, staffToken, "endpoints", "show", ep.ID); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("the deleted org's endpoint: %v, want not found", err)
	}
	rows := table(t, s.mustRun(t, staffToken, "orgs", "list"))
	if len(rows) != 2 || rows[1][0] != second.ID || rows[1][1] != "acme" {
		t.Fatalf("orgs after the rename and delete: %q", rows)
	}
}

package main

import (
	"reflect"
	"testing"

	"github.com/intakehq/intake"
)

func TestParsePeopleMapReadsStaffAndOrgsWithRolesViewerByDefault(t *testing.T) {
	m, err := parsePeopleMap([]string{"intake-staff=staff", "acme-ops=acme:operator", " acme-all = acme ", "team=ns:corp:admin"})
	if err != nil {
		t.Fatal(err)
	}
	want := intake.PeopleMap{
		{Group: "intake-staff", Staff: true},
		{Group: "acme-ops", Org: "acme", Role: intake.RoleOperator},
		{Group: "acme-all", Org: "acme", Role: intake.RoleViewer},
		{Group: "team", Org: "ns:corp", Role: intake.RoleAdmin},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("map = %+v\nwant %+v", m, want)
	}
}

func TestParsePeopleMapRefusesLinesItCannotRead(t *testing.T) {
	for _, line := range []string{"", "acme", "=acme", "group=", "g=acme:owner", "g=acme:", "g=:admin", "g=ns:corp"} {
		if _, err := parsePeopleMap([]string{line}); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("parsePeopleMap(%q) error = %v, want EINVALID", line, err)
		}
	}
}

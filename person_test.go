package intake

import (
	"reflect"
	"testing"
)

func TestParsePeopleMapReadsStaffAndOrgsWithRolesViewerByDefault(t *testing.T) {
	m, err := ParsePeopleMap([]string{"intake-staff=staff", "acme-ops=acme:operator", " acme-all = acme ", "team=ns:corp:admin"})
	if err != nil {
		t.Fatal(err)
	}
	want := PeopleMap{
		{Group: "intake-staff", Staff: true},
		{Group: "acme-ops", Org: "acme", Role: RoleOperator},
		{Group: "acme-all", Org: "acme", Role: RoleViewer},
		{Group: "team", Org: "ns:corp", Role: RoleAdmin},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("map = %+v\nwant %+v", m, want)
	}
}

func TestParsePeopleMapRefusesLinesItCannotRead(t *testing.T) {
	for _, line := range []string{"", "acme", "=acme", "group=", "g=acme:owner", "g=acme:", "g=:admin", "g=ns:corp"} {
		if _, err := ParsePeopleMap([]string{line}); ErrorCode(err) != EINVALID {
			t.Errorf("ParsePeopleMap(%q) error = %v, want EINVALID", line, err)
		}
	}
}

func TestPeopleMapGrantsStaffAboveAllAndEachOrgItsHighestRoleInMapOrder(t *testing.T) {
	m, err := ParsePeopleMap([]string{"globex-view=globex", "acme-view=acme:viewer", "acme-ops=acme:operator", "root=staff", "acme-admin=acme:admin"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		groups []string
		want   []PeopleGrant
	}{
		{nil, nil},
		{[]string{"unmapped"}, nil},
		{[]string{"acme-view"}, []PeopleGrant{{Group: "acme-view", Org: "acme", Role: RoleViewer}}},
		// The highest role wins whichever group comes first.
		{[]string{"acme-ops", "acme-view"}, []PeopleGrant{{Group: "acme-view", Org: "acme", Role: RoleOperator}}},
		{[]string{"acme-admin", "acme-ops"}, []PeopleGrant{{Group: "acme-ops", Org: "acme", Role: RoleAdmin}}},
		// Several orgs: the map's order, not the claim's.
		{[]string{"acme-ops", "globex-view"}, []PeopleGrant{
			{Group: "globex-view", Org: "globex", Role: RoleViewer}, {Group: "acme-ops", Org: "acme", Role: RoleOperator}}},
		// Staff is above every org, wherever it stands in the map.
		{[]string{"acme-ops", "globex-view", "root"}, []PeopleGrant{{Group: "root", Staff: true}}},
		// Groups match exactly.
		{[]string{"ROOT", "acme-ops "}, nil},
	}
	for _, c := range cases {
		if got := m.Grants(Person{Subject: "s", Groups: c.groups}); !reflect.DeepEqual(got, c.want) {
			t.Errorf("groups %q: grants %+v, want %+v", c.groups, got, c.want)
		}
	}
}

func TestPersonIsNamedByEmailElseSubjectAndNeedsASubject(t *testing.T) {
	if a := (Person{Subject: "248289761001", Email: "alice@example.com"}).Actor(); a != "person:alice@example.com" {
		t.Errorf("actor = %q", a)
	}
	if a := (Person{Subject: "248289761001"}).Actor(); a != "person:248289761001" {
		t.Errorf("actor without an email = %q", a)
	}
	for _, p := range []Person{{}, {Subject: " "}, {Subject: string(make([]byte, 256))}} {
		if err := CheckPerson(p); ErrorCode(err) != EUNAUTHORIZED {
			t.Errorf("CheckPerson(%q) = %v, want EUNAUTHORIZED", p.Subject, err)
		}
	}
	if err := CheckPerson(Person{Subject: "248289761001"}); err != nil {
		t.Errorf("a subject alone: %v", err)
	}
}

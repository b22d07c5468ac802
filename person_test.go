package intake

import (
	"reflect"
	"testing"
)

func TestPeopleMapGrantsStaffAboveAllAndEachOrgItsHighestRoleInMapOrder(t *testing.T) {
	m := PeopleMap{
		{Group: "globex-view", Org: "globex", Role: RoleViewer},
		{Group: "acme-view", Org: "acme", Role: RoleViewer},
		{Group: "acme-ops", Org: "acme", Role: RoleOperator},
		{Group: "root", Staff: true},
		{Group: "acme-admin", Org: "acme", Role: RoleAdmin},
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

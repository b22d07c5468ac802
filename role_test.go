package intake

import "testing"

func TestRolesAllowWhatTheRolesBelowThemAllow(t *testing.T) {
	cases := []struct {
		have, need Role
		ok         bool
	}{
		{RoleViewer, RoleViewer, true},
		{RoleViewer, RoleOperator, false},
		{RoleViewer, RoleAdmin, false},
		{RoleOperator, RoleViewer, true},
		{RoleOperator, RoleOperator, true},
		{RoleOperator, RoleAdmin, false},
		{RoleAdmin, RoleViewer, true},
		{RoleAdmin, RoleAdmin, true},
		{Role("root"), RoleViewer, false},
		{Role(""), RoleViewer, false},
		{RoleAdmin, Role("opertor"), false},
		{RoleAdmin, Role(""), false},
	}
	for _, c := range cases {
		if got := c.have.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v, want %v", c.have, c.need, got, c.ok)
		}
	}
}

func TestParseRoleReadsEachRoleAndDefaultsToAdmin(t *testing.T) {
	for in, want := range map[string]Role{"": RoleAdmin, "viewer": RoleViewer, " Operator ": RoleOperator, "admin": RoleAdmin} {
		got, err := ParseRole(in)
		if err != nil || got != want {
			t.Errorf("ParseRole(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseRole("owner"); ErrorCode(err) != EINVALID {
		t.Errorf("ParseRole(owner) error = %v, want EINVALID", err)
	}
}

package intake

import "strings"

// Role is what an org's key or person may do in its org (DESIGN §17). The
// roles are ordered: each may do everything the one before it may. The
// staff token is above every org and has no role.
type Role string

// The roles, least first.
const (
	// RoleViewer reads: messages, events, consumers, health, the audit.
	RoleViewer Role = "viewer"
	// RoleOperator also acts on traffic: replay, re-route, pause and
	// resume, rules tests.
	RoleOperator Role = "operator"
	// RoleAdmin does everything in the org, secrets, keys and consumers
	// included. Keys made before roles existed are admins.
	RoleAdmin Role = "admin"
)

// Roles lists the roles, least first.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// ParseRole reads a role's name; "" is RoleAdmin, as keys were before
// roles.
func ParseRole(s string) (Role, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return RoleAdmin, nil
	}
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", Errorf(EINVALID, "role must be viewer, operator or admin, not %q", s)
}

// rank orders the roles; an unknown role ranks below every known one.
func (r Role) rank() int {
	for i, known := range Roles {
		if r == known {
			return i
		}
	}
	return -1
}

// Allows reports whether a holder of r may do what needs at least need. An
// unknown role allows nothing, and nobody may do what needs an unknown one.
func (r Role) Allows(need Role) bool {
	return r.rank() >= 0 && need.rank() >= 0 && r.rank() >= need.rank()
}

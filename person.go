package intake

import (
	"slices"
	"strings"
)

// Person is someone an identity provider vouched for at a single sign-on
// (DESIGN §17): the provider's stable id for them, their email, and the
// values of the claim that maps people to orgs and roles (their groups).
type Person struct {
	Subject string
	Email   string // "" when the provider gave none, or an unverified one
	Groups  []string
}

// Actor names the person in the audit log: by email, which a reader
// recognises, else by subject. The sign-in's own entry names both.
func (p Person) Actor() string {
	if p.Email != "" {
		return "person:" + p.Email
	}
	return "person:" + p.Subject
}

// CheckPerson refuses a person the audit could not name.
func CheckPerson(p Person) error {
	switch {
	case strings.TrimSpace(p.Subject) == "":
		return Errorf(EUNAUTHORIZED, "the identity provider named no subject")
	case len(p.Subject) > 255: // OpenID Connect Core §2: at most 255 ASCII characters
		return Errorf(EUNAUTHORIZED, "the identity provider's subject is longer than 255 bytes")
	case len(p.Email) > 320:
		return Errorf(EUNAUTHORIZED, "the identity provider's email is longer than 320 bytes")
	}
	return nil
}

// PeopleMap says what each group of people may do: be staff, or act in an
// org with a role. Its order is the operator's: a person whose groups give
// several orgs signs in to the first of them.
type PeopleMap []PeopleGrant

// PeopleGrant is one line of a PeopleMap: the group it applies to, and
// staff, or an org (by name) and a role.
type PeopleGrant struct {
	Group string
	Staff bool
	Org   string
	Role  Role
}

// Grants is what p's groups give, in the map's order: staff alone when any
// group gives it; otherwise one grant per org, carrying the highest role
// any of p's groups gives there. None: p may not sign in.
func (m PeopleMap) Grants(p Person) []PeopleGrant {
	var out []PeopleGrant
	for _, g := range m {
		if !slices.Contains(p.Groups, g.Group) {
			continue
		}
		if g.Staff {
			return []PeopleGrant{g}
		}
		i := slices.IndexFunc(out, func(o PeopleGrant) bool { return o.Org == g.Org })
		switch {
		case i < 0:
			out = append(out, g)
		case g.Role.rank() > out[i].Role.rank():
			out[i].Role = g.Role
		}
	}
	return out
}

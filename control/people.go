package control

import (
	"cmp"
	"context"
	"strings"

	"github.com/intakehq/intake"
)

// SignInPerson admits a person an identity provider vouched for (DESIGN
// §17): the people map makes them staff, or gives them an org and a role;
// a person it gives nothing is EFORBIDDEN. Of several orgs the person gets
// the first in the map's order that exists. The console session s (its
// cookie hash, CSRF token and times set by the caller) is recorded for
// them with an audit entry naming their subject and email, in one
// transaction. What the map gave holds for the session's life; a change to
// the map applies at the person's next sign-in.
func (p *Plane) SignInPerson(ctx context.Context, who intake.Person, s intake.ConsoleSession) (Caller, error) {
	if err := intake.CheckPerson(who); err != nil {
		return Caller{}, err
	}
	grants := p.people.Grants(who)
	if len(grants) == 0 {
		p.log.Info("single sign-on refused: no group of the person is mapped", "subject", who.Subject, "groups", who.Groups)
		return Caller{}, intake.Errorf(intake.EFORBIDDEN, "%.320s may not sign in: none of their groups gives access to an org here; an operator can map one",
			cmp.Or(who.Email, who.Subject))
	}
	c := Caller{Actor: who.Actor()}
	if !grants[0].Staff {
		orgs, err := p.store.ListOrgs(ctx, intake.Scope{})
		if err != nil {
			return Caller{}, err
		}
		c.Scope.OrgID, c.OrgName, c.Role = firstOrg(grants, orgs)
		if c.Scope.OrgID == "" {
			p.log.Warn("single sign-on refused: the orgs mapped to the person do not exist", "subject", who.Subject, "orgs", grantOrgs(grants))
			return Caller{}, intake.Errorf(intake.EFORBIDDEN, "%.320s may not sign in: the org their groups give (%.200s) does not exist",
				cmp.Or(who.Email, who.Subject), grantOrgs(grants))
		}
	}
	s.OrgID, s.KeyHash, s.Subject, s.Email, s.Role, s.Actor = c.Scope.OrgID, nil, who.Subject, who.Email, c.Role, c.Actor
	given := "staff"
	if !c.Staff() {
		given = "role=" + string(c.Role)
	}
	entry := p.entry(c, c.Scope.OrgID, "session.sign_in", "person", who.Subject, "sub=", who.Subject, " email=", who.Email, " ", given)
	if err := p.store.CreateSession(ctx, s, entry); err != nil {
		return Caller{}, err
	}
	return c, nil
}

// firstOrg is the first granted org that exists, with its role.
func firstOrg(grants []intake.PeopleGrant, orgs []intake.Org) (id, name string, role intake.Role) {
	for _, g := range grants {
		for _, o := range orgs {
			if o.Name == g.Org {
				return o.ID, o.Name, g.Role
			}
		}
	}
	return "", "", ""
}

// grantOrgs names the granted orgs, for a refusal.
func grantOrgs(grants []intake.PeopleGrant) string {
	names := make([]string, len(grants))
	for i, g := range grants {
		names[i] = g.Org
	}
	return strings.Join(names, ", ")
}

package control

import (
	"context"
	"fmt"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/token"
)

// CreateOrg makes a tenant with its first API key (staff only); the key is
// returned once, only its hash is kept.
func (p *Plane) CreateOrg(ctx context.Context, c Caller, name string) (intake.Org, string, error) {
	if err := c.RequireStaff(); err != nil {
		return intake.Org{}, "", err
	}
	if err := p.checkOrgName(ctx, "", name); err != nil {
		return intake.Org{}, "", err
	}
	o := intake.Org{ID: intake.NewID(), Name: name, CreatedAt: p.now(), Version: 1}
	key, k := newKey(o.ID, intake.RoleAdmin, o.CreatedAt)
	if err := p.store.CreateOrg(ctx, o, k, p.entry(c, o.ID, "org.create", "org", o.ID, "name=", o.Name)); err != nil {
		return intake.Org{}, "", err
	}
	return o, key, nil
}

// checkOrgName refuses a name that is empty, too long, or another live
// org's (the org id's own is its to keep): `intake apply` finds an org by
// its name. The store's index holds it against a race.
func (p *Plane) checkOrgName(ctx context.Context, id, name string) error {
	if err := intake.CheckName("name", name); err != nil {
		return err
	}
	orgs, err := p.store.ListOrgs(ctx, intake.Scope{})
	if err != nil {
		return err
	}
	for _, o := range orgs {
		if o.Name == name && o.ID != id {
			return intake.Errorf(intake.ECONFLICT, "an org named %.64q exists already", name)
		}
	}
	return nil
}

// Org reads an org visible to the caller: an org key its own, staff any
// live org.
func (p *Plane) Org(ctx context.Context, c Caller, id string) (intake.Org, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Org{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Org{}, err
	}
	orgs, err := p.store.ListOrgs(ctx, c.Scope)
	if err != nil {
		return intake.Org{}, err
	}
	for _, o := range orgs {
		if o.ID == id {
			return o, nil
		}
	}
	return intake.Org{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", id)
}

// newKey makes an org API key with a role: the key itself, shown once, and
// the row that stores its hash.
func newKey(orgID string, role intake.Role, at time.Time) (string, intake.APIKey) {
	key := token.New(apiKeyPrefix)
	return key, intake.APIKey{ID: intake.NewID(), OrgID: orgID, Prefix: key[:keyPrefixLen], Hash: token.Hash(key), Role: role, CreatedAt: at}
}

// OrgUpdate is a change to an org: its name (staff only) and its own
// retention. nil leaves a setting as it is; a retention of "" or "0s"
// returns it to the server's default.
type OrgUpdate struct {
	Name          *string
	BodyRetention *string
	Retention     *string
	// Version, when set, is the version the change is made over (the
	// ETag the caller read): the change is refused if the org has changed
	// since. 0: over whatever is there.
	Version int64
}

// UpdateOrg renames an org (staff only) and sets its own retention, within
// bounds.
func (p *Plane) UpdateOrg(ctx context.Context, c Caller, id string, u OrgUpdate) (intake.Org, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Org{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Org{}, err
	}
	if u.Name != nil {
		if err := c.RequireStaff(); err != nil {
			return intake.Org{}, intake.Errorf(intake.EFORBIDDEN, "only the staff token may rename an org")
		}
	}
	return compareAndSet(u.Version, func() (intake.Org, error) { return p.updateOrg(ctx, c, id, u) })
}

// updateOrg is one try of UpdateOrg, over the version it reads.
func (p *Plane) updateOrg(ctx context.Context, c Caller, id string, u OrgUpdate) (intake.Org, error) {
	o, err := p.Org(ctx, c, id)
	if err != nil {
		return intake.Org{}, err
	}
	if err := checkVersion("org", u.Version, o.Version); err != nil {
		return intake.Org{}, err
	}
	was := o.Name
	if u.Name != nil {
		if err := p.checkOrgName(ctx, o.ID, *u.Name); err != nil {
			return intake.Org{}, err
		}
		o.Name = *u.Name
	}
	if u.BodyRetention != nil {
		if o.BodyRetention, err = retention("body_retention", *u.BodyRetention, p.maxBody); err != nil {
			return intake.Org{}, err
		}
	}
	if u.Retention != nil {
		if o.Retention, err = retention("retention", *u.Retention, p.maxRows); err != nil {
			return intake.Org{}, err
		}
	}
	detail := fmt.Sprintf("name=%q body_retention=%s retention=%s", o.Name, o.BodyRetention, o.Retention)
	if o.Name != was {
		detail += fmt.Sprintf(" (was %q)", was)
	}
	if err := p.store.UpdateOrg(ctx, c.Scope, o, p.entry(c, o.ID, "org.update", "org", o.ID, detail)); err != nil {
		return intake.Org{}, err
	}
	o.Version++
	return o, nil
}

// DeleteOrg deletes an org (staff only), softly: its endpoints refuse the
// very next request, its keys and console sessions stop, it and what it
// configured leave every list; its messages, events and audit stay. It
// returns the org as it was.
func (p *Plane) DeleteOrg(ctx context.Context, c Caller, id string) (intake.Org, error) {
	if err := c.RequireStaff(); err != nil {
		return intake.Org{}, err
	}
	o, err := p.Org(ctx, c, id)
	if err != nil {
		return intake.Org{}, err
	}
	if err := p.store.Delete(ctx, c.Scope, intake.DeleteOrg, o.ID, p.now(), p.entry(c, o.ID, "org.delete", "org", o.ID, "name=", o.Name)); err != nil {
		return intake.Org{}, err
	}
	return o, nil
}

// retention parses a retention setting: "" or "0s" for the default, else
// between an hour and max, the server's own.
func retention(field, v string, max time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := ParseDuration(field, v, "168h")
	switch {
	case err != nil:
		return 0, err
	case d == 0:
		return 0, nil
	case d < time.Hour || d > max:
		return 0, intake.Errorf(intake.EINVALID, "%s must be between 1h and %s (the server's maximum)", field, durationText(max))
	}
	return d, nil
}

// CreateKey adds an API key with a role and an optional name to an org (an
// org key: its own org); the key is returned once. A role of "" is admin,
// as keys were before roles.
func (p *Plane) CreateKey(ctx context.Context, c Caller, orgID string, role intake.Role, name string) (intake.APIKey, string, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.APIKey{}, "", err
	}
	role, err := intake.ParseRole(string(role))
	if err != nil {
		return intake.APIKey{}, "", err
	}
	if err := intake.CheckKeyName(name); err != nil {
		return intake.APIKey{}, "", err
	}
	orgID, err = orgFor(c, orgID)
	if err != nil {
		return intake.APIKey{}, "", err
	}
	key, k := newKey(orgID, role, p.now())
	k.Name = name
	a := p.entry(c, orgID, "key.create", "api_key", k.ID, "prefix=", k.Prefix, " role=", k.Role, fmt.Sprintf(" name=%q", name))
	if err := p.store.CreateAPIKey(ctx, c.Scope, k, a); err != nil {
		return intake.APIKey{}, "", err
	}
	return k, key, nil
}

// RevokeKey stops a key at once: the next request with it is refused, and
// the console sessions signed in with it end.
func (p *Plane) RevokeKey(ctx context.Context, c Caller, id string) error {
	if err := c.may(intake.RoleAdmin); err != nil {
		return err
	}
	if err := intake.CheckID("id", id); err != nil {
		return err
	}
	keys, err := p.store.ListAPIKeys(ctx, c.Scope)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == id {
			return p.store.RevokeAPIKey(ctx, c.Scope, id, p.now(), p.entry(c, k.OrgID, "key.revoke", "api_key", id, "prefix=", k.Prefix))
		}
	}
	return intake.Errorf(intake.ENOTFOUND, "api key %s not found", id)
}

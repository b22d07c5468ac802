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
	if err := intake.CheckName("name", name); err != nil {
		return intake.Org{}, "", err
	}
	o := intake.Org{ID: intake.NewID(), Name: name, CreatedAt: p.now()}
	key, k := newKey(o.ID, o.CreatedAt)
	if err := p.store.CreateOrg(ctx, o, k, p.entry(c, o.ID, "org.create", "org", o.ID, "name=", o.Name)); err != nil {
		return intake.Org{}, "", err
	}
	return o, key, nil
}

// newKey makes an org API key: the key itself, shown once, and the row
// that stores its hash.
func newKey(orgID string, at time.Time) (string, intake.APIKey) {
	key := token.New(apiKeyPrefix)
	return key, intake.APIKey{ID: intake.NewID(), OrgID: orgID, Prefix: key[:keyPrefixLen], Hash: token.Hash(key), CreatedAt: at}
}

// OrgUpdate is a change to an org's own retention: nil leaves a setting
// as it is, "" or "0s" returns it to the server's default.
type OrgUpdate struct {
	BodyRetention *string
	Retention     *string
}

// UpdateOrg sets an org's own retention, within bounds.
func (p *Plane) UpdateOrg(ctx context.Context, c Caller, id string, u OrgUpdate) (intake.Org, error) {
	if err := intake.CheckID("id", id); err != nil {
		return intake.Org{}, err
	}
	orgs, err := p.store.ListOrgs(ctx, c.Scope)
	if err != nil {
		return intake.Org{}, err
	}
	var o *intake.Org
	for i := range orgs {
		if orgs[i].ID == id {
			o = &orgs[i]
		}
	}
	if o == nil {
		return intake.Org{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", id)
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
	a := p.entry(c, o.ID, "org.update", "org", o.ID, fmt.Sprintf("body_retention=%s retention=%s", o.BodyRetention, o.Retention))
	if err := p.store.SetOrgRetention(ctx, c.Scope, o.ID, o.BodyRetention, o.Retention, a); err != nil {
		return intake.Org{}, err
	}
	return *o, nil
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

// CreateKey adds an API key to an org (an org key: its own org); the key is
// returned once.
func (p *Plane) CreateKey(ctx context.Context, c Caller, orgID string) (intake.APIKey, string, error) {
	orgID, err := orgFor(c, orgID)
	if err != nil {
		return intake.APIKey{}, "", err
	}
	key, k := newKey(orgID, p.now())
	if err := p.store.CreateAPIKey(ctx, c.Scope, k, p.entry(c, orgID, "key.create", "api_key", k.ID, "prefix=", k.Prefix)); err != nil {
		return intake.APIKey{}, "", err
	}
	return k, key, nil
}

// RevokeKey stops a key at once: the next request with it is refused, and
// the console sessions signed in with it end.
func (p *Plane) RevokeKey(ctx context.Context, c Caller, id string) error {
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

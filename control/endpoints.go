package control

import (
	"context"
	"fmt"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/token"
)

// Limits are an endpoint's settings a create or an update may give; nil
// keeps the default (create) or the current value (update).
type Limits struct {
	// Name is unique among the named endpoints of a connection; "" leaves
	// (or makes) it unnamed.
	Name         *string
	Enabled      *bool
	MaxBodyBytes *int64
	RatePerSec   *float64
	Burst        *int
	// Version, when set, is the version the change is made over (the
	// ETag the caller read): the change is refused if the endpoint has
	// changed since. 0: over whatever is there.
	Version int64
}

// CreatedEndpoint is a new or rotated endpoint with the token and URL that
// address it, returned once: only the token's hash is kept.
type CreatedEndpoint struct {
	intake.Endpoint
	Token string
	URL   string
}

// CreateEndpoint adds an ingress address to a connection.
func (p *Plane) CreateEndpoint(ctx context.Context, c Caller, connectionID string, l Limits) (CreatedEndpoint, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return CreatedEndpoint{}, err
	}
	if connectionID == "" {
		return CreatedEndpoint{}, intake.Errorf(intake.EINVALID, "connection_id is required")
	}
	if err := intake.CheckID("connection_id", connectionID); err != nil {
		return CreatedEndpoint{}, err
	}
	cn, err := p.store.Connection(ctx, c.Scope, connectionID)
	if err != nil {
		return CreatedEndpoint{}, err
	}
	tok := token.New("")
	e := intake.Endpoint{
		ID: intake.NewID(), OrgID: cn.OrgID, ConnectionID: cn.ID, Provider: cn.Provider, TokenHash: token.Hash(tok),
		Enabled: true, MaxBodyBytes: p.defaultBodyBytes(), RatePerSec: intake.DefaultRatePerSec, Burst: intake.DefaultBurst,
		CreatedAt: p.now(),
	}
	if err := p.applyLimits(&e, l); err != nil {
		return CreatedEndpoint{}, err
	}
	if err := p.checkEndpointName(ctx, c, e); err != nil {
		return CreatedEndpoint{}, err
	}
	e.SealedToken = p.sealer.Seal([]byte(tok), []byte(e.ID))
	if err := p.store.CreateEndpoint(ctx, e, p.entry(c, e.OrgID, "endpoint.create", "endpoint", e.ID, "connection=", e.ConnectionID, " name=", e.Name)); err != nil {
		return CreatedEndpoint{}, err
	}
	return CreatedEndpoint{Endpoint: e, Token: tok, URL: p.publicURL + "/webhooks/" + tok}, nil
}

// UpdateEndpoint enables or disables an endpoint and sets its limits; a
// disabled endpoint refuses the very next request.
func (p *Plane) UpdateEndpoint(ctx context.Context, c Caller, id string, l Limits) (intake.Endpoint, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Endpoint{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Endpoint{}, err
	}
	return compareAndSet(l.Version, func() (intake.Endpoint, error) { return p.updateEndpoint(ctx, c, id, l) })
}

// updateEndpoint is one try of UpdateEndpoint, over the version it reads.
func (p *Plane) updateEndpoint(ctx context.Context, c Caller, id string, l Limits) (intake.Endpoint, error) {
	e, err := p.store.Endpoint(ctx, c.Scope, id)
	if err != nil {
		return intake.Endpoint{}, err
	}
	if err := checkVersion("endpoint", l.Version, e.Version); err != nil {
		return intake.Endpoint{}, err
	}
	if err := p.applyLimits(&e, l); err != nil {
		return intake.Endpoint{}, err
	}
	if err := p.checkEndpointName(ctx, c, e); err != nil {
		return intake.Endpoint{}, err
	}
	a := p.entry(c, e.OrgID, "endpoint.update", "endpoint", e.ID,
		fmt.Sprintf("name=%q enabled=%v max_body_bytes=%d rate_per_sec=%g burst=%d", e.Name, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst))
	if err := p.store.UpdateEndpoint(ctx, c.Scope, e, a); err != nil {
		return intake.Endpoint{}, err
	}
	e.Version++
	return e, nil
}

// RotateEndpoint gives an endpoint a new token, so a lost URL is replaced,
// not read. The current token keeps working for overlap (nil: 24 h; 0: it
// stops at once); one an earlier rotation left working stops now.
func (p *Plane) RotateEndpoint(ctx context.Context, c Caller, id string, overlap *time.Duration) (CreatedEndpoint, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return CreatedEndpoint{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return CreatedEndpoint{}, err
	}
	d := intake.DefaultTokenOverlap
	if overlap != nil {
		d = *overlap
	}
	tok := token.New("")
	e, err := compareAndSet(0, func() (intake.Endpoint, error) {
		e, err := p.store.Endpoint(ctx, c.Scope, id)
		if err != nil {
			return e, err
		}
		if e, err = e.RotateToken(token.Hash(tok), p.sealer.Seal([]byte(tok), []byte(e.ID)), p.now(), d); err != nil {
			return e, err
		}
		a := p.entry(c, e.OrgID, "endpoint.rotate", "endpoint", e.ID, "overlap=", d)
		if err := p.store.RotateEndpointToken(ctx, c.Scope, e, a); err != nil {
			return e, err
		}
		e.Version++
		return e, nil
	})
	if err != nil {
		return CreatedEndpoint{}, err
	}
	return CreatedEndpoint{Endpoint: e, Token: tok, URL: p.publicURL + "/webhooks/" + tok}, nil
}

// applyLimits sets the settings l gives and validates the result.
func (p *Plane) applyLimits(e *intake.Endpoint, l Limits) error {
	if l.Name != nil {
		if *l.Name != "" {
			if err := intake.CheckName("name", *l.Name); err != nil {
				return err
			}
		}
		e.Name = *l.Name
	}
	if l.Enabled != nil {
		e.Enabled = *l.Enabled
	}
	if l.MaxBodyBytes != nil {
		if p.bodyCap > 0 && p.bodyCap < p.maxBodyBytes() && *l.MaxBodyBytes > p.bodyCap {
			return intake.Errorf(intake.EINVALID, "max_body_bytes must be between 1 and %d (the server's maximum)", p.bodyCap)
		}
		e.MaxBodyBytes = *l.MaxBodyBytes
	}
	if l.RatePerSec != nil {
		e.RatePerSec = *l.RatePerSec
	}
	if l.Burst != nil {
		if *l.Burst < 0 {
			return intake.Errorf(intake.EINVALID, "burst must not be negative")
		}
		e.Burst = *l.Burst
	}
	return e.Validate(p.maxBodyBytes())
}

// maxBodyBytes is the largest max_body_bytes the store may take: more
// with a blob store, which keeps large bodies out of the database.
func (p *Plane) maxBodyBytes() int64 {
	if p.blobs != nil {
		return intake.MaxBlobBodyBytes
	}
	return intake.MaxBodyBytes
}

// defaultBodyBytes is an endpoint's max_body_bytes when none is given:
// intake.DefaultMaxBodyBytes, or the server's maximum if that is lower.
func (p *Plane) defaultBodyBytes() int64 {
	if p.bodyCap > 0 {
		return min(intake.DefaultMaxBodyBytes, p.bodyCap)
	}
	return intake.DefaultMaxBodyBytes
}

// checkEndpointName refuses a name another endpoint of the same connection
// already has: apply matches endpoints by it.
func (p *Plane) checkEndpointName(ctx context.Context, c Caller, e intake.Endpoint) error {
	if e.Name == "" {
		return nil
	}
	eps, err := p.store.ListEndpoints(ctx, c.Scope)
	if err != nil {
		return err
	}
	for _, o := range eps {
		if o.ID != e.ID && o.ConnectionID == e.ConnectionID && o.Name == e.Name {
			return intake.Errorf(intake.ECONFLICT, "connection %s already has an endpoint named %.64q", e.ConnectionID, e.Name)
		}
	}
	return nil
}

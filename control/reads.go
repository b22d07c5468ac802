package control

import (
	"context"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
)

// StatedConsumer is a consumer with its state (DESIGN §16): what its
// deliveries do now, beyond whether it is enabled.
type StatedConsumer struct {
	intake.Consumer
	State string
}

// Consumers lists the consumers the caller may see, each with its state.
func (p *Plane) Consumers(ctx context.Context, c Caller) ([]StatedConsumer, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	cs, err := p.store.ListConsumers(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	states, err := p.store.ConsumerStates(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	out := make([]StatedConsumer, 0, len(cs))
	for _, cs := range cs {
		out = append(out, stated(cs, states))
	}
	return out, nil
}

// Consumer reads one consumer with its state.
func (p *Plane) Consumer(ctx context.Context, c Caller, id string) (StatedConsumer, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return StatedConsumer{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return StatedConsumer{}, err
	}
	cs, err := p.store.Consumer(ctx, c.Scope, id)
	if err != nil {
		return StatedConsumer{}, err
	}
	return p.Stated(ctx, cs)
}

// Stated adds its state to a consumer an action returned.
func (p *Plane) Stated(ctx context.Context, cs intake.Consumer) (StatedConsumer, error) {
	states, err := p.store.ConsumerStates(ctx, intake.Scope{OrgID: cs.OrgID})
	if err != nil {
		return StatedConsumer{}, err
	}
	return stated(cs, states), nil
}

// stated pairs a consumer with its state; one created after the states
// were read is as its row says.
func stated(c intake.Consumer, states map[string]string) StatedConsumer {
	st, ok := states[c.ID]
	if !ok {
		st = intake.ConsumerStanding{Enabled: c.Enabled, Paused: c.Controls.Paused}.State()
	}
	return StatedConsumer{Consumer: c, State: st}
}

// Every read below checks what the caller gave it once, here, and reads
// in the caller's scope; the transports only decode and encode.

// ParseLimit reads a page size as a caller wrote it ("": the default).
func ParseLimit(v string) (int, error) {
	if v == "" {
		return intake.DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errLimit()
	}
	return n, checkPage(n, "")
}

func errLimit() error {
	return intake.Errorf(intake.EINVALID, "limit must be an integer between 1 and %d", intake.MaxPageSize)
}

// checkPage is what a page request may hold: a size within the bounds (0:
// the default) and a cursor that is an id, as every list pages by id.
func checkPage(limit int, cursor string) error {
	if limit < 0 || limit > intake.MaxPageSize {
		return errLimit()
	}
	if cursor != "" && !intake.ValidID(cursor) {
		return intake.Errorf(intake.EINVALID, "malformed cursor")
	}
	return nil
}

// maxProviderEventID and maxEventType bound the text a filter may carry.
const (
	maxProviderEventID = 500
	maxEventType       = 200
)

// checkMessageFilter is what a message filter may select.
func checkMessageFilter(f intake.MessageFilter) error {
	if len(f.ProviderEventID) > maxProviderEventID {
		return intake.Errorf(intake.EINVALID, "provider_event_id must be at most %d bytes", maxProviderEventID)
	}
	if f.EndpointID != "" {
		if err := intake.CheckID("endpoint_id", f.EndpointID); err != nil {
			return err
		}
	}
	if f.State != "" && !f.State.Valid() {
		return intake.Errorf(intake.EINVALID, "state must be one of %s", join(intake.MessageStates))
	}
	if len(f.Type) > maxEventType {
		return intake.Errorf(intake.EINVALID, "type must be at most %d bytes", maxEventType)
	}
	if err := checkSearch(f.Search); err != nil {
		return err
	}
	if err := checkSearchRange(f.Since, f.Until); err != nil {
		return err
	}
	return checkPage(f.Limit, f.Cursor)
}

// checkEventFilter is what an event filter may select.
func checkEventFilter(f intake.EventFilter) error {
	if f.ConsumerID != "" {
		if err := intake.CheckID("consumer_id", f.ConsumerID); err != nil {
			return err
		}
	}
	if f.State != "" && !f.State.Valid() {
		return intake.Errorf(intake.EINVALID, "state must be one of %s", join(intake.EventStates))
	}
	if len(f.Type) > maxEventType {
		return intake.Errorf(intake.EINVALID, "type must be at most %d bytes", maxEventType)
	}
	if err := checkSearch(f.Search); err != nil {
		return err
	}
	if err := checkSearchRange(f.Since, f.Until); err != nil {
		return err
	}
	return checkPage(f.Limit, f.Cursor)
}

func join[S ~string](states []S) string {
	names := make([]string, len(states))
	for i, v := range states {
		names[i] = string(v)
	}
	return strings.Join(names, ", ")
}

// Within narrows a staff caller to one org, for reads about that org's rows
// alone (the events a consumer of it could be tried against), where it acts
// as the org's admin; an org's caller already sees only its own.
func (c Caller) Within(orgID string) Caller {
	if c.Staff() {
		c.Scope, c.Role = intake.Scope{OrgID: orgID}, intake.RoleAdmin
	}
	return c
}

// Orgs lists the orgs the caller may see: staff every live org, an org key
// its own.
func (p *Plane) Orgs(ctx context.Context, c Caller) ([]intake.Org, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	return p.store.ListOrgs(ctx, c.Scope)
}

// APIKeys lists the API keys the caller may see, without the keys.
func (p *Plane) APIKeys(ctx context.Context, c Caller) ([]intake.APIKey, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return nil, err
	}
	return p.store.ListAPIKeys(ctx, c.Scope)
}

// Connections lists the connections the caller may see.
func (p *Plane) Connections(ctx context.Context, c Caller) ([]intake.Connection, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	return p.store.ListConnections(ctx, c.Scope)
}

// Connection reads one connection.
func (p *Plane) Connection(ctx context.Context, c Caller, id string) (intake.Connection, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Connection{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Connection{}, err
	}
	return p.store.Connection(ctx, c.Scope, id)
}

// Endpoints lists the endpoints the caller may see.
func (p *Plane) Endpoints(ctx context.Context, c Caller) ([]intake.Endpoint, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	return p.store.ListEndpoints(ctx, c.Scope)
}

// Endpoint reads one endpoint.
func (p *Plane) Endpoint(ctx context.Context, c Caller, id string) (intake.Endpoint, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Endpoint{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Endpoint{}, err
	}
	return p.store.Endpoint(ctx, c.Scope, id)
}

// Audit lists the audit entries the caller may see, newest first.
func (p *Plane) Audit(ctx context.Context, c Caller, f intake.AuditFilter) (intake.Page[intake.AuditEntry], error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Page[intake.AuditEntry]{}, err
	}
	if err := checkPage(f.Limit, f.Cursor); err != nil {
		return intake.Page[intake.AuditEntry]{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (intake.Page[intake.AuditEntry], error) {
		return p.store.ListAudit(ctx, c.Scope, f)
	})
}

// Overview counts where the caller's messages and events stand, hour by
// hour over q's window.
func (p *Plane) Overview(ctx context.Context, c Caller, q intake.OverviewQuery) (intake.Overview, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.Overview{}, err
	}
	if q.Hours < 1 || q.Hours > intake.MaxOverviewHours {
		return intake.Overview{}, intake.Errorf(intake.EINVALID, "an overview covers 1 to %d hours", intake.MaxOverviewHours)
	}
	o, err := budgeted(ctx, p, c, func(ctx context.Context) (intake.Overview, error) { return p.store.Overview(ctx, c.Scope, q) })
	if err == nil && p.replica != nil && c.Staff() {
		// The replica is the server's, not an org's: staff see it.
		st := p.replica()
		o.Replica = &st
	}
	return o, err
}

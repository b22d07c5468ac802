package control

import (
	"context"
	"strings"

	"github.com/intakehq/intake"
)

// EventTypes lists the event types the caller's connections have received
// (one connection's, when connectionID is set), with their counts.
func (p *Plane) EventTypes(ctx context.Context, c Caller, connectionID string) ([]intake.EventType, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return nil, err
	}
	if connectionID != "" {
		if err := intake.CheckID("connection_id", connectionID); err != nil {
			return nil, err
		}
	}
	return budgeted(ctx, p, c, func(ctx context.Context) ([]intake.EventType, error) {
		return p.store.ListEventTypes(ctx, c.Scope, intake.EventTypeFilter{ConnectionID: connectionID, Now: p.now()})
	})
}

// EventType reads one event type with its schema, example, days and
// changes. connectionID may be left out when only one of the caller's
// connections has received the type.
func (p *Plane) EventType(ctx context.Context, c Caller, connectionID, typ string) (intake.EventTypeDetail, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return intake.EventTypeDetail{}, err
	}
	if typ == "" || len(typ) > maxEventType {
		return intake.EventTypeDetail{}, intake.Errorf(intake.EINVALID, "type must be 1 to %d bytes", maxEventType)
	}
	if connectionID == "" {
		all, err := p.EventTypes(ctx, c, "")
		if err != nil {
			return intake.EventTypeDetail{}, err
		}
		var conns []string
		for _, t := range all {
			if t.Type == typ {
				conns = append(conns, t.ConnectionID)
			}
		}
		switch len(conns) {
		case 0:
			return intake.EventTypeDetail{}, intake.Errorf(intake.ENOTFOUND, "no connection has received event type %.200q", typ)
		case 1:
			connectionID = conns[0]
		default:
			return intake.EventTypeDetail{}, intake.Errorf(intake.EINVALID,
				"%d connections have received event type %.200q; name one with connection_id (%s)", len(conns), typ, strings.Join(conns, ", "))
		}
	}
	if err := intake.CheckID("connection_id", connectionID); err != nil {
		return intake.EventTypeDetail{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (intake.EventTypeDetail, error) {
		return p.store.EventType(ctx, c.Scope, intake.EventTypeKey{ConnectionID: connectionID, Type: typ}, p.now())
	})
}

package control

import (
	"context"

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

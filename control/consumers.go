package control

import (
	"context"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// Consumer limits: room for any real subscription, small enough to refuse
// a paste of the wrong thing.
const (
	maxEventTypes  = 100
	maxPatternLen  = 200
	maxConsumerURL = 2048
	resolveTimeout = 5 * time.Second
)

// NewConsumer is what a consumer is registered with. OrgID may be empty for
// an org's key.
type NewConsumer struct {
	OrgID      string
	Name       string
	App        string
	URL        string
	EventTypes []string
	Completion bool
}

// CreateConsumer registers an application; its signing secret is returned
// once and kept sealed.
func (p *Plane) CreateConsumer(ctx context.Context, c Caller, n NewConsumer) (intake.Consumer, string, error) {
	if err := intake.CheckName("name", n.Name); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := intake.CheckName("app", n.App); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := checkEventTypes(n.EventTypes); err != nil {
		return intake.Consumer{}, "", err
	}
	if n.URL == "" {
		return intake.Consumer{}, "", intake.Errorf(intake.EINVALID, "url is required")
	}
	if len(n.URL) > maxConsumerURL {
		return intake.Consumer{}, "", intake.Errorf(intake.EINVALID, "url must be at most %d bytes", maxConsumerURL)
	}
	orgID, err := orgFor(c, n.OrgID)
	if err != nil {
		return intake.Consumer{}, "", err
	}
	// Resolving the host is the slowest check, so it comes last, and a
	// resolver that does not answer cannot hold the request.
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	err = p.policy.CheckURL(rctx, n.URL)
	cancel()
	if err != nil {
		return intake.Consumer{}, "", intake.Errorf(intake.EINVALID, "%v", err)
	}
	// The id is made first because the sealed secret is bound to it.
	cs := intake.Consumer{ID: intake.NewID(), OrgID: orgID, Name: n.Name, App: n.App, URL: n.URL, EventTypes: n.EventTypes,
		Completion: n.Completion, Enabled: true, CreatedAt: p.now()}
	secret := delivery.NewSecret()
	cs.SealedSecret = p.sealer.Seal([]byte(secret), []byte(cs.ID))
	if err := p.store.CreateConsumer(ctx, cs, p.entry(c, cs.OrgID, "consumer.create", "consumer", cs.ID, "url=", cs.URL)); err != nil {
		return intake.Consumer{}, "", err
	}
	return cs, secret, nil
}

// checkEventTypes requires at least one pattern and every one well formed.
func checkEventTypes(patterns []string) error {
	if len(patterns) == 0 {
		return intake.Errorf(intake.EINVALID, "event_types needs at least one pattern (e.g. stripe.invoice.paid, stripe.invoice.*, *)")
	}
	if len(patterns) > maxEventTypes {
		return intake.Errorf(intake.EINVALID, "event_types may hold at most %d patterns", maxEventTypes)
	}
	for i, pat := range patterns {
		if len(pat) > maxPatternLen {
			return intake.Errorf(intake.EINVALID, "event_types[%d] is longer than %d bytes", i, maxPatternLen)
		}
		if err := intake.ValidatePattern(pat); err != nil {
			return intake.Errorf(intake.EINVALID, "event_types[%d]: %s", i, intake.ErrorMessage(err))
		}
	}
	return nil
}

// ConsumerUpdate is a change to a consumer; nil leaves a setting as it is.
type ConsumerUpdate struct {
	Enabled *bool
}

// UpdateConsumer changes a consumer's settings.
func (p *Plane) UpdateConsumer(ctx context.Context, c Caller, id string, u ConsumerUpdate) (intake.Consumer, error) {
	if err := intake.CheckID("id", id); err != nil {
		return intake.Consumer{}, err
	}
	if u.Enabled == nil {
		return intake.Consumer{}, intake.Errorf(intake.EINVALID, "enabled is required")
	}
	cs, err := p.store.Consumer(ctx, c.Scope, id)
	if err != nil {
		return intake.Consumer{}, err
	}
	a := p.entry(c, cs.OrgID, "consumer.update", "consumer", cs.ID, "enabled=", *u.Enabled)
	if err := p.store.SetConsumerEnabled(ctx, c.Scope, id, *u.Enabled, a); err != nil {
		return intake.Consumer{}, err
	}
	cs.Enabled = *u.Enabled
	return cs, nil
}

package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
)

// TestEventType is the type of the event a consumer's test delivers.
const TestEventType = "intake.test"

// ConsumerTest is what a test delivery came to: the test event's id and
// what the destination said.
type ConsumerTest struct {
	EventID string
	Result  delivery.Result
}

// TestConsumer delivers a test event (intake.test) to a consumer of any
// kind, now, signed as its events are, without its filter and transform,
// and answers what the destination said: an HTTP consumer's status, a
// broker's acknowledgement, or why neither came. Nothing is recorded but
// the audit entry; a disabled or paused consumer is tested too. Tests are
// bounded per org, at once and a second (EBUSY past them).
func (p *Plane) TestConsumer(ctx context.Context, c Caller, id string) (ConsumerTest, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return ConsumerTest{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return ConsumerTest{}, err
	}
	// The budget first: a test past it costs no read of the store.
	release, err := p.takeTest(ctx, c)
	if err != nil {
		return ConsumerTest{}, err
	}
	defer release()
	cs, err := p.store.Consumer(intake.OperatorRead(ctx), c.Scope, id)
	if err != nil {
		return ConsumerTest{}, err
	}
	secrets, dest, err := p.opened(cs)
	if err != nil {
		return ConsumerTest{}, err
	}
	now := p.now()
	data, err := json.Marshal(map[string]string{"message": "a test event from intake", "consumer_id": cs.ID, "consumer": cs.Name})
	if err != nil {
		return ConsumerTest{}, err
	}
	env := intake.Envelope{ID: intake.NewID(), Type: TestEventType, Kind: intake.KindEvent, OrgID: cs.OrgID, Provider: "intake",
		OccurredAt: now, ReceivedAt: now, Data: data}
	body, err := json.Marshal(env)
	if err != nil {
		return ConsumerTest{}, err
	}
	res := p.sender.Deliver(ctx, cs.ID, dest, secrets, delivery.Publication{ID: env.ID, Type: env.Type, Body: body}, now)
	detail := fmt.Sprintf("event=%s outcome=%s", env.ID, res.Outcome)
	if res.StatusCode != 0 {
		detail += fmt.Sprintf(" status=%d", res.StatusCode)
	}
	if err := p.store.RecordAudit(ctx, p.entry(c, cs.OrgID, "consumer.test", "consumer", cs.ID, detail)); err != nil {
		return ConsumerTest{}, err
	}
	return ConsumerTest{EventID: env.ID, Result: res}, nil
}

// opened is a consumer's signing secrets now and its whole url.
func (p *Plane) opened(cs intake.Consumer) ([]string, string, error) {
	secrets, err := p.sealer.ConsumerSecrets(cs, p.now())
	if err != nil {
		return nil, "", fmt.Errorf("open the secrets of consumer %s: %w", cs.ID, err)
	}
	dest, err := p.sealer.ConsumerURL(cs)
	if err != nil {
		return nil, "", fmt.Errorf("open the url of consumer %s: %w", cs.ID, err)
	}
	return secrets, dest, nil
}

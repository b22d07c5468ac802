package control

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/rules"
)

// RuleTest is a dry run of a rule: its kind and source, against a stored
// event (EventID), a stored message (MessageID, for interpret) or an event
// given inline (Event, the envelope a consumer receives).
type RuleTest struct {
	Kind      rules.Kind
	Source    string
	EventID   string
	MessageID string
	Event     json.RawMessage
}

// TestRule runs a rule once, as the data plane would, and writes nothing.
// A rule that does not compile is EINVALID, naming the position; one that
// fails on the input is a result with Error set.
func (p *Plane) TestRule(ctx context.Context, c Caller, t RuleTest) (rules.TestResult, error) {
	if err := c.may(intake.RoleOperator); err != nil {
		return rules.TestResult{}, err
	}
	// The dry run waits for a script host in the caller's org's queue.
	in := rules.TestInput{Scope: c.Scope.OrgID}
	switch {
	case t.Source == "":
		return rules.TestResult{}, intake.Errorf(intake.EINVALID, "source is required")
	case t.Kind == rules.KindInterpret:
		if t.MessageID == "" {
			return rules.TestResult{}, intake.Errorf(intake.EINVALID, "an interpret script is tried against a stored message: give message_id")
		}
		if err := intake.CheckID("message_id", t.MessageID); err != nil {
			return rules.TestResult{}, err
		}
		m, err := p.store.Message(ctx, c.Scope, t.MessageID)
		if err != nil {
			return rules.TestResult{}, err
		}
		body, header, err := p.readBody(ctx, c.Scope, m.ID)
		if err != nil {
			return rules.TestResult{}, err
		}
		names, err := p.credentialHeaders(ctx, c.Scope, m.ConnectionID)
		if err != nil {
			return rules.TestResult{}, err
		}
		query, _ := url.ParseQuery(m.Query)
		in.Request = rules.NewRequest(m.Method, query, header, body, names...)
	case t.EventID != "":
		if err := intake.CheckID("event_id", t.EventID); err != nil {
			return rules.TestResult{}, err
		}
		e, err := p.store.Event(ctx, c.Scope, t.EventID)
		if err != nil {
			return rules.TestResult{}, err
		}
		if in.EventJSON, err = json.Marshal(intake.NewEnvelope(&e)); err != nil {
			return rules.TestResult{}, err
		}
		// The event was read in the caller's scope, so its message is theirs.
		reqs, err := p.store.MessageRequests(ctx, []string{e.MessageID})
		if err != nil {
			return rules.TestResult{}, err
		}
		names, err := p.credentialHeaders(ctx, c.Scope, e.ConnectionID)
		if err != nil {
			return rules.TestResult{}, err
		}
		req := reqs[e.MessageID]
		in.Headers, in.Query = rules.RequestView(req.Header, req.Query, names...)
	case len(t.Event) > 0:
		in.EventJSON = t.Event
	default:
		return rules.TestResult{}, intake.Errorf(intake.EINVALID, "give event_id, or event (the envelope a consumer receives)")
	}
	if in.Headers == nil {
		in.Headers, in.Query = map[string]string{}, map[string]string{}
	}
	if t.Kind == rules.KindTransform {
		in.Context = rules.TransformContext{Headers: in.Headers, Query: in.Query, Attempt: 1}
	}
	return p.rules.Test(ctx, t.Kind, t.Source, in)
}

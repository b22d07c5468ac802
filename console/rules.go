package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/rules"
)

// consumerView is a consumer's page: its settings and the rule editor,
// with the result of a dry run when one was asked for.
type consumerView struct {
	C                 intake.Consumer
	Filter, Transform string // the editor's contents: saved, or what was tried
	Events            []intake.Event
	EventID           string
	Results           []ruleResult
}

// ruleResult is one rule's dry run as the page shows it.
type ruleResult struct {
	Kind       rules.Kind
	Result     string
	Error      string
	DurationMS float64
}

// maxTestEvents bounds the events offered to test rules against.
const maxTestEvents = 25

func (c *Console) consumer(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	cs, err := c.store.Consumer(r.Context(), s.scope(), id)
	if err != nil {
		return err
	}
	v := consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform}
	return c.renderConsumer(w, r, s, v)
}

func (c *Console) renderConsumer(w http.ResponseWriter, r *http.Request, s *session, v consumerView) error {
	events, err := c.testEvents(r.Context(), s, v.C)
	if err != nil {
		return err
	}
	v.Events = events
	c.render(w, r, s, http.StatusOK, "consumer", "Consumer "+v.C.Name, v)
	return nil
}

// testEvents are the org's newest stored events the consumer's types match,
// to try its rules against.
func (c *Console) testEvents(ctx context.Context, s *session, cs intake.Consumer) ([]intake.Event, error) {
	var out []intake.Event
	f := intake.EventFilter{Limit: 200}
	page, err := c.store.ListEvents(ctx, intake.Scope{OrgID: cs.OrgID}, f)
	if err != nil {
		return nil, err
	}
	for _, e := range page.Items {
		if cs.Wants(e.Type) && len(out) < maxTestEvents {
			out = append(out, e)
		}
	}
	return out, nil
}

// testConsumerRules tries the editor's filter and transform against the
// chosen event; nothing is saved.
func (c *Console) testConsumerRules(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	cs, err := c.store.Consumer(r.Context(), s.scope(), id)
	if err != nil {
		return err
	}
	v := consumerView{C: cs, Filter: strings.TrimSpace(r.PostFormValue("filter")), Transform: r.PostFormValue("transform"),
		EventID: r.PostFormValue("event")}
	if !intake.ValidID(v.EventID) {
		return intake.Errorf(intake.EINVALID, "choose an event to test against")
	}
	for _, t := range []struct {
		kind rules.Kind
		src  string
	}{{rules.KindFilter, v.Filter}, {rules.KindTransform, v.Transform}} {
		if strings.TrimSpace(t.src) == "" {
			continue
		}
		res, err := c.ctl.TestRule(r.Context(), s.caller(), control.RuleTest{Kind: t.kind, Source: t.src, EventID: v.EventID})
		out := ruleResult{Kind: t.kind, DurationMS: float64(res.Duration.Microseconds()) / 1000, Error: res.Error}
		switch {
		case intake.ErrorCode(err) == intake.EINVALID:
			out.Error = intake.ErrorMessage(err)
		case err != nil:
			return err
		default:
			b, _ := json.MarshalIndent(res.Result, "", "  ")
			out.Result = string(b)
		}
		v.Results = append(v.Results, out)
	}
	if v.Results == nil {
		return intake.Errorf(intake.EINVALID, "write a filter or a transform to test")
	}
	return c.renderConsumer(w, r, s, v)
}

// saveConsumerRules saves the editor's filter and transform through the
// control plane: checked, audited with the old and new source.
func (c *Console) saveConsumerRules(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	filter, transform := strings.TrimSpace(r.PostFormValue("filter")), r.PostFormValue("transform")
	if strings.TrimSpace(transform) == "" {
		transform = ""
	}
	if _, err := c.ctl.UpdateConsumer(r.Context(), s.caller(), id, control.ConsumerUpdate{Filter: &filter, Transform: &transform}); err != nil {
		return err
	}
	return redirect(w, r, "/console/consumers/"+id+"?flash=rules-saved")
}

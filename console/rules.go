package console

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/rules"
)

// consumerView is a consumer's page: its settings and the rule editor,
// with the result of a dry run when one was asked for.
type consumerView struct {
	C                 intake.Consumer
	Health            intake.ConsumerHealth
	History           consumerHistory
	NewSecret         string                // a rotated secret, shown this once
	Test              *control.ConsumerTest // a test delivery's result
	OldSecretUntil    time.Time
	Filter, Transform string // the editor's contents: saved, or what was tried
	Events            []intake.Event
	EventID           string
	Results           []ruleResult
	// Edit is the settings form: the consumer's own, or what was entered
	// and refused, with why.
	Edit consumerEdit
	// Controls is the delivery controls form, as Edit is the settings'.
	Controls controlsEdit
	status   int             // the page's HTTP status; 0 is the status asked for
	Invalid  *ruleDiagnostic // why the editor's rules were not saved
}

// ruleDiagnostic is why an editor's rules were refused when saved: the
// rule at fault (empty when the refusal names none) and the checker's
// message, a line each, shown under that rule's box with the edit kept.
type ruleDiagnostic struct {
	Rule  rules.Kind
	Lines []string
}

// diagnose is the diagnostic of an error saving rules, or nil when the
// error is not a refusal of what the operator wrote.
func diagnose(err error) *ruleDiagnostic {
	if intake.ErrorCode(err) != intake.EINVALID {
		return nil
	}
	msg := intake.ErrorMessage(err)
	d := &ruleDiagnostic{Lines: strings.Split(strings.TrimRight(msg, "\n"), "\n")}
	for _, k := range []rules.Kind{rules.KindFilter, rules.KindTransform, rules.KindInterpret} {
		if strings.HasPrefix(msg, string(k)) {
			d.Rule = k
		}
	}
	if strings.HasPrefix(msg, "config.script") {
		d.Rule = rules.KindInterpret
	}
	return d
}

// ruleResult is one rule's dry run as the page shows it.
type ruleResult struct {
	Kind       rules.Kind
	Result     string
	Error      string
	DurationMS float64
}

// tryRule is one dry run as a page shows it: a rule that does not compile
// is its result too, with the position, so the editor stays open.
func (c *Console) tryRule(ctx context.Context, s *session, t control.RuleTest) (ruleResult, error) {
	res, err := c.ctl.TestRule(ctx, s.caller(), t)
	out := ruleResult{Kind: t.Kind, DurationMS: float64(res.Duration.Microseconds()) / 1000, Error: res.Error}
	switch {
	case intake.ErrorCode(err) == intake.EINVALID:
		out.Error = intake.ErrorMessage(err)
	case err != nil:
		return out, err
	default:
		b, _ := json.MarshalIndent(res.Result, "", "  ")
		out.Result = string(b)
	}
	return out, nil
}

// maxTestEvents bounds the events offered to test rules against.
const maxTestEvents = 25

func (c *Console) consumer(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	cs, err := c.consumerRow(r.Context(), s, id)
	if err != nil {
		return err
	}
	v := consumerView{C: cs, Filter: cs.Filter, Transform: cs.Transform}
	return c.renderConsumer(w, r, s, v)
}

// consumerRow reads a consumer for its page.
func (c *Console) consumerRow(ctx context.Context, s *session, id string) (intake.Consumer, error) {
	cs, err := c.ctl.Consumer(ctx, s.caller(), id)
	return cs.Consumer, err
}

func (c *Console) renderConsumer(w http.ResponseWriter, r *http.Request, s *session, v consumerView) error {
	return c.renderConsumerAs(w, r, s, http.StatusOK, v)
}

// renderConsumerAs renders the consumer's page with the status given: a
// refused edit is answered with its page, and the status of the refusal.
func (c *Console) renderConsumerAs(w http.ResponseWriter, r *http.Request, s *session, status int, v consumerView) error {
	events, err := c.testEvents(r.Context(), s, v.C)
	if err != nil {
		return err
	}
	v.Events = events
	if v.Health, err = c.ctl.ConsumerHealth(r.Context(), s.caller(), v.C.ID); err != nil {
		return err
	}
	if v.History, err = c.consumerHistory(r.Context(), s, v.C.ID); err != nil {
		return err
	}
	if v.Controls == (controlsEdit{}) {
		v.Controls = controlsForm(v.C.Controls)
	}
	if v.Edit == (consumerEdit{}) {
		v.Edit = consumerEdit{Name: v.C.Name, URL: v.C.URL, EventTypes: strings.Join(v.C.EventTypes, ", ")}
	}
	c.render(w, r, s, cmp.Or(v.status, status), "consumer", "Consumer "+v.C.Name, v)
	return nil
}

// testEvents are the org's newest stored events the consumer's types match,
// to try its rules against.
func (c *Console) testEvents(ctx context.Context, s *session, cs intake.Consumer) ([]intake.Event, error) {
	var out []intake.Event
	f := intake.EventFilter{Limit: 200}
	page, err := c.ctl.Events(ctx, s.caller().Within(cs.OrgID), f)
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
	cs, err := c.consumerRow(r.Context(), s, id)
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
		out, err := c.tryRule(r.Context(), s, control.RuleTest{Kind: t.kind, Source: t.src, EventID: v.EventID})
		if err != nil {
			return err
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
	_, err = c.ctl.UpdateConsumer(r.Context(), s.caller(), id, control.ConsumerUpdate{Filter: &filter, Transform: &transform})
	if d := diagnose(err); d != nil {
		// The page again, with the edit in the editor and why it was refused.
		cs, rerr := c.consumerRow(r.Context(), s, id)
		if rerr != nil {
			return rerr
		}
		return c.renderConsumerAs(w, r, s, control.HTTPStatus(err), consumerView{C: cs, Filter: filter, Transform: transform, Invalid: d})
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/consumers/"+id+"?flash=rules-saved")
}

// connectionView is a connection's page: its filter, and the interpret
// script of a provider described without code.
type connectionView struct {
	C              intake.Connection
	Secrets        string
	Scripted       bool // hmac or none: a script may describe the provider
	Filter, Script string
	Events         []intake.Event
	Messages       []intake.Message
	Target         string
	Results        []ruleResult
	Invalid        *ruleDiagnostic // why the editor's rules were not saved
}

func (c *Console) connection(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	cn, err := c.ctl.Connection(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	return c.renderConnection(w, r, s, connectionView{C: cn, Filter: cn.Filter, Script: control.Script(cn)})
}

func (c *Console) renderConnection(w http.ResponseWriter, r *http.Request, s *session, v connectionView) error {
	return c.renderConnectionAs(w, r, s, http.StatusOK, v)
}

// renderConnectionAs renders the connection's page with the status given.
func (c *Console) renderConnectionAs(w http.ResponseWriter, r *http.Request, s *session, status int, v connectionView) error {
	ctx := r.Context()
	v.Scripted = control.DescribedByScript(v.C.Provider)
	v.Secrets = "?"
	if n, ok := c.ctl.SecretCount(v.C); ok {
		v.Secrets = strconv.Itoa(n)
	}
	in := s.caller().Within(v.C.OrgID)
	events, err := c.ctl.Events(ctx, in, intake.EventFilter{Limit: 200})
	if err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.ConnectionID == v.C.ID && len(v.Events) < maxTestEvents {
			v.Events = append(v.Events, e)
		}
	}
	eps, err := c.ctl.Endpoints(ctx, in)
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if ep.ConnectionID != v.C.ID || !v.Scripted {
			continue
		}
		page, err := c.ctl.Messages(ctx, in, intake.MessageFilter{EndpointID: ep.ID, Limit: maxTestEvents})
		if err != nil {
			return err
		}
		v.Messages = append(v.Messages, page.Items...)
	}
	c.render(w, r, s, status, "connection", "Connection "+v.C.Name, v)
	return nil
}

// testConnectionRules tries the editor's filter against a stored event of
// the connection, or its script against a stored message; nothing is saved.
func (c *Console) testConnectionRules(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	cn, err := c.ctl.Connection(r.Context(), s.caller(), id)
	if err != nil {
		return err
	}
	v := connectionView{C: cn, Filter: strings.TrimSpace(r.PostFormValue("filter")), Script: r.PostFormValue("script")}
	kind, target, _ := strings.Cut(r.PostFormValue("target"), ":")
	if !intake.ValidID(target) {
		return intake.Errorf(intake.EINVALID, "choose an event or a message to test against")
	}
	v.Target = target
	t := control.RuleTest{Kind: rules.KindFilter, Source: v.Filter, EventID: target}
	if kind == "message" {
		t = control.RuleTest{Kind: rules.KindInterpret, Source: v.Script, MessageID: target}
	}
	if strings.TrimSpace(t.Source) == "" {
		return intake.Errorf(intake.EINVALID, "write the %s to test", t.Kind)
	}
	out, err := c.tryRule(r.Context(), s, t)
	if err != nil {
		return err
	}
	v.Results = []ruleResult{out}
	return c.renderConnection(w, r, s, v)
}

// saveConnectionRules saves the editor's filter (and script) through the
// control plane.
func (c *Console) saveConnectionRules(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	filter := strings.TrimSpace(r.PostFormValue("filter"))
	u := control.ConnectionUpdate{Filter: &filter}
	if _, ok := r.PostForm["script"]; ok { // the page offers it for hmac and none only
		script := r.PostFormValue("script")
		u.Script = &script
	}
	_, err = c.ctl.UpdateConnection(r.Context(), s.caller(), id, u)
	if d := diagnose(err); d != nil {
		cn, rerr := c.ctl.Connection(r.Context(), s.caller(), id)
		if rerr != nil {
			return rerr
		}
		v := connectionView{C: cn, Filter: filter, Script: control.Script(cn), Invalid: d}
		if u.Script != nil {
			v.Script = *u.Script
		}
		return c.renderConnectionAs(w, r, s, control.HTTPStatus(err), v)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/connections/"+id+"?flash=rules-saved")
}

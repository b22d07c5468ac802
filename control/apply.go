package control

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/rules"
)

// Apply makes the store hold what doc declares, for the orgs the caller
// may act in: it compares the document with the store, validates the whole
// of it, and (unless opts.DryRun) carries the difference out through the
// same actions the API and the console call, each audited as it is there.
// Bad input is refused before anything is written. The plan lists every
// change in the order it is made; applying the same document again is all
// unchanged.
func (p *Plane) Apply(ctx context.Context, c Caller, doc Document, opts ApplyOptions) (Plan, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return Plan{}, err
	}
	pl := &planner{p: p, c: c, prune: opts.Prune}
	if err := pl.document(ctx, doc); err != nil {
		return Plan{}, err
	}
	plan := Plan{DryRun: opts.DryRun, Unchanged: true, Changes: pl.changes}
	for _, ch := range plan.Changes {
		plan.Unchanged = plan.Unchanged && ch.Action == ActionUnchanged
	}
	if opts.DryRun {
		return plan, nil
	}
	for i, run := range pl.runs {
		if run == nil {
			continue
		}
		if err := run(ctx, &plan.Changes[i]); err != nil {
			ch := plan.Changes[i]
			return Plan{}, &intake.Error{Code: intake.ErrorCode(err), Err: err, Message: fmt.Sprintf(
				"%s %s %s: %s (the changes before it were made; applying again finishes the rest)",
				ch.Action, ch.Kind, changePath(ch), intake.ErrorMessage(err))}
		}
	}
	return plan, nil
}

// changePath names a change's target as "org/connection/endpoint".
func changePath(ch Change) string {
	switch {
	case ch.Kind == "org":
		return ch.Name
	case ch.Connection != "":
		return ch.Org + "/" + ch.Connection + "/" + ch.Name
	}
	return ch.Org + "/" + ch.Name
}

// step carries one change out; it may fill in what it minted.
type step func(ctx context.Context, ch *Change) error

// planner compares a document with the store and collects the changes with
// the steps that make them.
type planner struct {
	p       *Plane
	c       Caller
	prune   bool
	changes []Change
	runs    []step
}

func (pl *planner) add(ch Change, run step) {
	pl.changes = append(pl.changes, ch)
	pl.runs = append(pl.runs, run)
}

// idRef is an org's or a connection's id: known when planning, or set by the
// step that creates it for the steps after it.
type idRef struct{ id string }

func (pl *planner) document(ctx context.Context, doc Document) error {
	if len(doc.Orgs) == 0 {
		return intake.Errorf(intake.EINVALID, "the document names no org (orgs: [{name: …}])")
	}
	orgs, err := pl.p.store.ListOrgs(ctx, pl.c.Scope)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, spec := range doc.Orgs {
		if err := intake.CheckName(fmt.Sprintf("orgs[%d].name", i), spec.Name); err != nil {
			return err
		}
		if seen[spec.Name] {
			return intake.Errorf(intake.EINVALID, "org %.64q is named twice", spec.Name)
		}
		seen[spec.Name] = true
		// A name is unique among live orgs (the store holds it), so it
		// finds one org or none.
		var existing *intake.Org
		for i := range orgs {
			if orgs[i].Name == spec.Name {
				existing = &orgs[i]
			}
		}
		if existing == nil && !pl.c.Staff() {
			return intake.Errorf(intake.EFORBIDDEN, "an org's API key applies its own org (%s) only, not %.64q", pl.c.OrgName, spec.Name)
		}
		if err := pl.org(ctx, spec, existing); err != nil {
			return err
		}
	}
	return nil
}

func (pl *planner) org(ctx context.Context, spec OrgSpec, existing *intake.Org) error {
	body, err := retention("body_retention of org "+spec.Name, spec.BodyRetention, pl.p.maxBody)
	if err != nil {
		return err
	}
	rows, err := retention("retention of org "+spec.Name, spec.Retention, pl.p.maxRows)
	if err != nil {
		return err
	}
	ch := Change{Kind: "org", Org: spec.Name, Name: spec.Name}
	u := OrgUpdate{BodyRetention: &spec.BodyRetention, Retention: &spec.Retention}
	oref := &idRef{}
	if existing == nil {
		ch.Action = ActionCreate
		pl.add(ch, func(ctx context.Context, ch *Change) error {
			o, key, err := pl.p.CreateOrg(ctx, pl.c, spec.Name)
			if err != nil {
				return err
			}
			oref.id, ch.ID, ch.APIKey = o.ID, o.ID, key
			if body != 0 || rows != 0 {
				_, err = pl.p.UpdateOrg(ctx, pl.c, o.ID, u)
			}
			return err
		})
		if err := pl.orgContents(ctx, spec, oref, nil); err != nil {
			return err
		}
		return pl.notifications(ctx, spec, oref, nil)
	}
	oref.id, ch.ID = existing.ID, existing.ID
	if existing.BodyRetention != body {
		ch.Fields = append(ch.Fields, "body_retention")
	}
	if existing.Retention != rows {
		ch.Fields = append(ch.Fields, "retention")
	}
	pl.update(ch, func(ctx context.Context, ch *Change) error {
		_, err := pl.p.UpdateOrg(ctx, pl.c, oref.id, u)
		return err
	})
	if err := pl.orgContents(ctx, spec, oref, existing); err != nil {
		return err
	}
	return pl.notifications(ctx, spec, oref, existing)
}

// notifications plans an org's notification settings, when the document
// gives them: checked as PutNotifications checks them, compared with what
// is stored (the Slack URL opened to compare), and put when they differ.
// The first put's signing secret is in the plan, once.
func (pl *planner) notifications(ctx context.Context, spec OrgSpec, oref *idRef, existing *intake.Org) error {
	n := spec.Notifications
	if n == nil {
		return nil
	}
	where := "notifications of org " + spec.Name
	topics, err := checkTopics(n.Topics)
	if err != nil {
		return inside(where, err)
	}
	if err := checkSlackURL(n.SlackWebhookURL); err != nil {
		return inside(where, err)
	}
	for _, u := range []string{n.URL, n.SlackWebhookURL} {
		if u != "" {
			if err := pl.p.checkURL(ctx, u); err != nil {
				return inside(where, err)
			}
		}
	}
	ch := Change{Kind: "notifications", Org: spec.Name, Name: spec.Name}
	run := func(ctx context.Context, ch *Change) error {
		got, err := pl.p.PutNotifications(ctx, pl.c, oref.id, NotificationUpdate{URL: n.URL, SlackURL: n.SlackWebhookURL, Topics: topics})
		ch.ID, ch.SigningSecret = oref.id, got.SigningSecret
		return err
	}
	if existing == nil {
		ch.Action = ActionCreate
		pl.add(ch, run)
		return nil
	}
	ch.ID = existing.ID
	old, err := pl.p.store.NotificationSettings(ctx, intake.Scope{OrgID: existing.ID}, existing.ID)
	switch {
	case intake.ErrorCode(err) == intake.ENOTFOUND:
		ch.Action = ActionCreate
		pl.add(ch, run)
		return nil
	case err != nil:
		return err
	}
	slack, err := pl.p.sealer.NotificationSlackURL(old)
	if err != nil {
		return fmt.Errorf("open the Slack URL of org %s: %w", spec.Name, err)
	}
	dest, err := pl.p.sealer.NotificationURL(old)
	if err != nil {
		return fmt.Errorf("open the notification URL of org %s: %w", spec.Name, err)
	}
	if dest != n.URL && old.URL != n.URL {
		ch.Fields = append(ch.Fields, "url")
	}
	if slack != n.SlackWebhookURL {
		ch.Fields = append(ch.Fields, "slack_webhook_url")
	}
	if !slices.Equal(old.Topics, topics) {
		ch.Fields = append(ch.Fields, "topics")
	}
	pl.update(ch, run)
	return nil
}

// update adds ch as an update when it changes fields, else as unchanged.
func (pl *planner) update(ch Change, run step) {
	if len(ch.Fields) == 0 {
		ch.Action = ActionUnchanged
		run = nil
	} else {
		ch.Action = ActionUpdate
	}
	pl.add(ch, run)
}

// orgContents plans an org's connections (each followed by its endpoints),
// its consumers and, with prune, the deletes. existing is nil for an org
// the apply creates.
func (pl *planner) orgContents(ctx context.Context, spec OrgSpec, oref *idRef, existing *intake.Org) error {
	var conns []intake.Connection
	var eps []intake.Endpoint
	var consumers []intake.Consumer
	if existing != nil {
		sc := intake.Scope{OrgID: existing.ID}
		var err error
		if conns, err = pl.p.store.ListConnections(ctx, sc); err != nil {
			return err
		}
		if eps, err = pl.p.store.ListEndpoints(ctx, sc); err != nil {
			return err
		}
		if consumers, err = pl.p.store.ListConsumers(ctx, sc); err != nil {
			return err
		}
	}
	named := map[string]bool{}
	for _, cs := range spec.Connections {
		if err := intake.CheckName("connection name in org "+spec.Name, cs.Name); err != nil {
			return err
		}
		if named[cs.Name] {
			return intake.Errorf(intake.EINVALID, "org %s names connection %.64q twice", spec.Name, cs.Name)
		}
		named[cs.Name] = true
		cn, err := only(conns, cs.Name, func(c intake.Connection) string { return c.Name }, "connections", spec.Name)
		if err != nil {
			return err
		}
		if err := pl.connection(ctx, spec.Name, cs, oref, cn, eps); err != nil {
			return err
		}
	}
	namedConsumers := map[string]bool{}
	for _, cs := range spec.Consumers {
		if err := intake.CheckName("consumer name in org "+spec.Name, cs.Name); err != nil {
			return err
		}
		if namedConsumers[cs.Name] {
			return intake.Errorf(intake.EINVALID, "org %s names consumer %.64q twice", spec.Name, cs.Name)
		}
		namedConsumers[cs.Name] = true
		nameOf := func(c intake.Consumer) string { return c.Name }
		old, err := only(consumers, cs.Name, nameOf, "consumers", spec.Name)
		if err != nil {
			return err
		}
		if old == nil && cs.RenamedFrom != "" {
			if old, err = only(consumers, cs.RenamedFrom, nameOf, "consumers", spec.Name); err != nil {
				return err
			}
		}
		if old != nil && old.Name != cs.Name {
			if namedConsumers[old.Name] || declares(spec.Consumers, old.Name) {
				return intake.Errorf(intake.EINVALID, "org %s renames consumer %.64q to %.64q and names %.64q too", spec.Name, old.Name, cs.Name, old.Name)
			}
			namedConsumers[old.Name] = true
		}
		if err := pl.consumer(ctx, spec.Name, cs, oref, old); err != nil {
			return err
		}
	}
	if !pl.prune {
		return nil
	}
	for _, cs := range consumers {
		if !namedConsumers[cs.Name] {
			pl.remove(Change{Kind: "consumer", Org: spec.Name, Name: cs.Name, ID: cs.ID}, intake.DeleteConsumer)
		}
	}
	for _, cn := range conns {
		if !named[cn.Name] {
			pl.remove(Change{Kind: "connection", Org: spec.Name, Name: cn.Name, ID: cn.ID}, intake.DeleteConnection)
		}
	}
	return nil
}

// declares reports whether specs name a consumer name.
func declares(specs []ConsumerSpec, name string) bool {
	return slices.ContainsFunc(specs, func(s ConsumerSpec) bool { return s.Name == name })
}

// remove plans a (soft) delete.
func (pl *planner) remove(ch Change, kind intake.DeleteKind) {
	ch.Action = ActionDelete
	pl.add(ch, func(ctx context.Context, ch *Change) error {
		return pl.p.Delete(ctx, pl.c, kind, ch.ID)
	})
}

// only finds the one stored row named name; two are ambiguous.
func only[T any](rows []T, name string, nameOf func(T) string, what, org string) (*T, error) {
	var found *T
	for i := range rows {
		if nameOf(rows[i]) != name {
			continue
		}
		if found != nil {
			return nil, intake.Errorf(intake.ECONFLICT, "org %s has several %s named %.64q; rename all but one to manage it by name", org, what, name)
		}
		found = &rows[i]
	}
	return found, nil
}

func (pl *planner) connection(ctx context.Context, org string, spec ConnectionSpec, oref *idRef, old *intake.Connection, eps []intake.Endpoint) error {
	where := fmt.Sprintf("connection %s/%s", org, spec.Name)
	adapter, ok := provider.Lookup(spec.Provider)
	if !ok {
		return intake.Errorf(intake.EINVALID, "%s: unknown provider %.64q (one of %s)", where, spec.Provider, strings.Join(provider.Names(), ", "))
	}
	rawConfig, err := json.Marshal(spec.Config)
	if err != nil {
		return intake.Errorf(intake.EINVALID, "%s: config: %v", where, err)
	}
	config, err := provider.CheckConfig(adapter, rawConfig)
	if err != nil {
		return inside(where, err)
	}
	for i, s := range spec.Secrets {
		if strings.HasPrefix(s, "${env:") || strings.HasPrefix(s, "${file:") {
			return intake.Errorf(intake.EINVALID, "%s: secrets[%d] is an unresolved placeholder; intake apply resolves ${env:…} and ${file:…} on the operator's machine", where, i)
		}
	}
	if old == nil || len(spec.Secrets) > 0 {
		if err := provider.CheckSecrets(spec.Provider, spec.Secrets); err != nil {
			return inside(where, err)
		}
	}
	ch := Change{Kind: "connection", Org: org, Name: spec.Name}
	cref := &idRef{}
	if old == nil {
		if err := pl.p.checkConnectionRules(ctx, oref.id, spec.Provider, config, spec.Filter); err != nil {
			return inside(where, err)
		}
		ch.Action = ActionCreate
		pl.add(ch, func(ctx context.Context, ch *Change) error {
			cn, err := pl.p.CreateConnection(ctx, pl.c, NewConnection{OrgID: oref.id, Provider: spec.Provider, Name: spec.Name,
				Secrets: spec.Secrets, Config: config, Filter: spec.Filter})
			cref.id, ch.ID = cn.ID, cn.ID
			return err
		})
		return pl.endpoints(org, spec, cref, nil)
	}
	if old.Provider != spec.Provider {
		return intake.Errorf(intake.EINVALID, "%s is a %s connection; its provider cannot become %.64q (delete it and create another)", where, old.Provider, spec.Provider)
	}
	cref.id, ch.ID = old.ID, old.ID
	u := ConnectionUpdate{}
	if !sameJSON(old.Config, config) {
		u.Config = config
		if !sameJSON(withoutScript(old.Config), withoutScript(config)) {
			ch.Fields = append(ch.Fields, "config")
		}
		if script(old.Config) != script(config) {
			ch.Fields = append(ch.Fields, "config.script")
		}
	}
	if old.Filter != spec.Filter {
		ch.Fields = append(ch.Fields, "filter")
		u.Filter = &spec.Filter
	}
	if err := pl.p.checkConnectionRules(ctx, oref.id, spec.Provider, config, changed(old.Filter, spec.Filter)); err != nil {
		return inside(where, err)
	}
	replace := len(spec.Secrets) > 0 && !pl.sameSecrets(*old, spec.Secrets)
	if replace {
		ch.Fields = append(ch.Fields, "secrets")
	}
	pl.update(ch, func(ctx context.Context, ch *Change) error {
		if u.Config != nil || u.Filter != nil {
			if _, err := pl.p.UpdateConnection(ctx, pl.c, cref.id, u); err != nil {
				return err
			}
		}
		if replace {
			_, err := pl.p.ReplaceSecrets(ctx, pl.c, cref.id, spec.Secrets)
			return err
		}
		return nil
	})
	var mine []intake.Endpoint
	for _, e := range eps {
		if e.ConnectionID == old.ID && e.Name != "" {
			mine = append(mine, e)
		}
	}
	return pl.endpoints(org, spec, cref, mine)
}

// inside prefixes an error's message with where it was found, keeping its
// code.
func inside(where string, err error) error {
	return &intake.Error{Code: intake.ErrorCode(err), Message: where + ": " + intake.ErrorMessage(err), Err: err}
}

// sameSecrets opens a connection's stored secrets to compare them with the
// document's; they go no further than this function. Secrets that do not
// open (the master key changed) are replaced.
func (pl *planner) sameSecrets(cn intake.Connection, want []string) bool {
	opened, err := pl.p.sealer.ConnectionSecrets(cn)
	if err != nil || len(opened) != len(want) {
		return false
	}
	for i := range opened {
		if string(opened[i]) != want[i] {
			return false
		}
	}
	return true
}

// sameJSON compares two JSON documents by value, whatever their key order.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// withoutScript is a connection config without its interpret script.
func withoutScript(config json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(config, &m) != nil {
		return config
	}
	delete(m, "script")
	b, _ := json.Marshal(m)
	return b
}

func (pl *planner) endpoints(org string, spec ConnectionSpec, cref *idRef, existing []intake.Endpoint) error {
	named := map[string]bool{}
	for _, es := range spec.Endpoints {
		where := fmt.Sprintf("endpoint %s/%s/%s", org, spec.Name, es.Name)
		if err := intake.CheckName("endpoint name in connection "+org+"/"+spec.Name, es.Name); err != nil {
			return err
		}
		if named[es.Name] {
			return intake.Errorf(intake.EINVALID, "connection %s/%s names endpoint %.64q twice", org, spec.Name, es.Name)
		}
		named[es.Name] = true
		want := intake.Endpoint{Enabled: true, MaxBodyBytes: pl.p.defaultBodyBytes(), RatePerSec: intake.DefaultRatePerSec, Burst: intake.DefaultBurst}
		l := Limits{Name: &es.Name, Enabled: es.Enabled, MaxBodyBytes: es.MaxBodyBytes, RatePerSec: es.RatePerSec, Burst: es.Burst}
		if err := pl.p.applyLimits(&want, l); err != nil {
			return inside(where, err)
		}
		// Absent settings are the defaults: the update sets every one.
		l = Limits{Name: &es.Name, Enabled: &want.Enabled, MaxBodyBytes: &want.MaxBodyBytes, RatePerSec: &want.RatePerSec, Burst: &want.Burst}
		ch := Change{Kind: "endpoint", Org: org, Connection: spec.Name, Name: es.Name}
		var old *intake.Endpoint
		for i := range existing {
			if existing[i].Name == es.Name {
				old = &existing[i]
			}
		}
		if old == nil {
			ch.Action = ActionCreate
			pl.add(ch, func(ctx context.Context, ch *Change) error {
				e, err := pl.p.CreateEndpoint(ctx, pl.c, cref.id, l)
				ch.ID, ch.Token, ch.URL = e.ID, e.Token, e.URL
				return err
			})
			continue
		}
		ch.ID = old.ID
		if old.Enabled != want.Enabled {
			ch.Fields = append(ch.Fields, "enabled")
		}
		if old.MaxBodyBytes != want.MaxBodyBytes {
			ch.Fields = append(ch.Fields, "max_body_bytes")
		}
		if old.RatePerSec != want.RatePerSec {
			ch.Fields = append(ch.Fields, "rate_per_sec")
		}
		if old.Burst != want.Burst {
			ch.Fields = append(ch.Fields, "burst")
		}
		pl.update(ch, func(ctx context.Context, ch *Change) error {
			_, err := pl.p.UpdateEndpoint(ctx, pl.c, ch.ID, l)
			return err
		})
	}
	if !pl.prune {
		return nil
	}
	for _, e := range existing {
		if !named[e.Name] {
			pl.remove(Change{Kind: "endpoint", Org: org, Connection: spec.Name, Name: e.Name, ID: e.ID}, intake.DeleteEndpoint)
		}
	}
	return nil
}

func (pl *planner) consumer(ctx context.Context, org string, spec ConsumerSpec, oref *idRef, old *intake.Consumer) error {
	where := fmt.Sprintf("consumer %s/%s", org, spec.Name)
	if err := intake.CheckName("app", spec.App); err != nil {
		return inside(where, err)
	}
	if err := checkEventTypes(spec.EventTypes); err != nil {
		return inside(where, err)
	}
	enabled := spec.Enabled == nil || *spec.Enabled
	ch := Change{Kind: "consumer", Org: org, Name: spec.Name}
	ctl, err := spec.controls()
	if err != nil {
		return inside(where, err)
	}
	if ctl.Ordering != "" && ctl.Ordering != intake.OrderingSubject && (old == nil || old.Controls.Ordering != ctl.Ordering) {
		if err := pl.p.rules.Check(ctx, oref.id, rules.KindKey, ctl.Ordering); err != nil {
			return inside(where, orderingError(err))
		}
	}
	if old == nil {
		if err := pl.p.checkRules(ctx, oref.id, spec.Filter, spec.Transform); err != nil {
			return inside(where, err)
		}
		if err := pl.p.checkURL(ctx, spec.URL); err != nil {
			return inside(where, err)
		}
		ch.Action = ActionCreate
		pl.add(ch, func(ctx context.Context, ch *Change) error {
			cs, secret, err := pl.p.CreateConsumer(ctx, pl.c, NewConsumer{OrgID: oref.id, Name: spec.Name, App: spec.App, URL: spec.URL,
				EventTypes: spec.EventTypes, Completion: spec.Completion, Filter: spec.Filter, Transform: spec.Transform,
				Disabled: !enabled, Controls: controlsUpdate(ctl)})
			ch.ID, ch.SigningSecret = cs.ID, secret
			return err
		})
		return nil
	}
	ch.ID = old.ID
	if err := pl.p.checkRules(ctx, oref.id, changed(old.Filter, spec.Filter), changed(old.Transform, spec.Transform)); err != nil {
		return inside(where, err)
	}
	u := ConsumerUpdate{}
	if old.Name != spec.Name {
		ch.Fields, u.Name = append(ch.Fields, "name"), &spec.Name
	}
	if old.App != spec.App {
		ch.Fields, u.App = append(ch.Fields, "app"), &spec.App
	}
	if !pl.p.sameURL(*old, spec.URL) {
		if err := pl.p.checkURL(ctx, spec.URL); err != nil {
			return inside(where, err)
		}
		ch.Fields, u.URL = append(ch.Fields, "url"), &spec.URL
	}
	if !slices.Equal(old.EventTypes, spec.EventTypes) {
		ch.Fields, u.EventTypes = append(ch.Fields, "event_types"), &spec.EventTypes
	}
	if old.Completion != spec.Completion {
		ch.Fields, u.Completion = append(ch.Fields, "completion"), &spec.Completion
	}
	if old.Enabled != enabled {
		ch.Fields, u.Enabled = append(ch.Fields, "enabled"), &enabled
	}
	if old.Filter != spec.Filter {
		ch.Fields, u.Filter = append(ch.Fields, "filter"), &spec.Filter
	}
	if old.Transform != spec.Transform {
		ch.Fields, u.Transform = append(ch.Fields, "transform"), &spec.Transform
	}
	if old.Controls != ctl {
		ch.Fields, u.ControlsUpdate = append(ch.Fields, "delivery controls"), controlsUpdate(ctl)
	}
	pl.update(ch, func(ctx context.Context, ch *Change) error {
		_, err := pl.p.UpdateConsumer(ctx, pl.c, ch.ID, u)
		return err
	})
	return nil
}

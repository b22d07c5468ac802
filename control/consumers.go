package control

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/rules"
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
	Filter     string // CEL; empty: every event its patterns match
	Transform  string // JavaScript; empty: the envelope as it is
	// Disabled registers it without sending it anything yet.
	Disabled bool
	// Controls are its delivery controls, checked as an update's are;
	// nil is none (or the server's default).
	Controls ControlsUpdate
}

// CreateConsumer registers an application; its signing secret is returned
// once and kept sealed.
func (p *Plane) CreateConsumer(ctx context.Context, c Caller, n NewConsumer) (intake.Consumer, string, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := intake.CheckName("name", n.Name); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := intake.CheckName("app", n.App); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := checkEventTypes(n.EventTypes); err != nil {
		return intake.Consumer{}, "", err
	}
	orgID, err := orgFor(c, n.OrgID)
	if err != nil {
		return intake.Consumer{}, "", err
	}
	if err := p.checkRules(ctx, orgID, n.Filter, n.Transform); err != nil {
		return intake.Consumer{}, "", err
	}
	var ctl intake.Controls
	if err := p.applyControls(ctx, orgID, &ctl, n.Controls); err != nil {
		return intake.Consumer{}, "", err
	}
	if err := p.checkURL(ctx, n.URL); err != nil {
		return intake.Consumer{}, "", err
	}
	// The id is made first because the sealed secret is bound to it.
	cs := intake.Consumer{ID: intake.NewID(), OrgID: orgID, Name: n.Name, App: n.App, EventTypes: n.EventTypes,
		Completion: n.Completion, Enabled: !n.Disabled, CreatedAt: p.now(), Filter: n.Filter, Transform: n.Transform, Controls: ctl}
	p.setURL(&cs, n.URL)
	secret := delivery.NewSecret()
	cs.SealedSecret = p.sealer.Seal([]byte(secret), []byte(cs.ID))
	detail := append([]string{"url=" + cs.URL}, controlChanges(intake.Controls{}, ctl)...)
	if n.Disabled {
		detail = append(detail, "enabled=false")
	}
	a := p.entry(c, cs.OrgID, "consumer.create", "consumer", cs.ID, strings.Join(detail, " "), ruleChange("filter", "", cs.Filter),
		ruleChange("transform", "", cs.Transform), ruleChange("ordering", "", ctl.Ordering))
	if err := p.store.CreateConsumer(ctx, cs, a); err != nil {
		return intake.Consumer{}, "", err
	}
	return cs, secret, nil
}

// setURL sets where a consumer's events go. A url that carries
// credentials (a broker's password) is sealed whole, bound to the
// consumer; its url shows the password as *** (DESIGN §12).
func (p *Plane) setURL(cs *intake.Consumer, raw string) {
	cs.URL, cs.SealedURL = redact.URL(raw), nil
	if cs.URL != raw {
		cs.SealedURL = p.sealer.SealConsumerURL(cs.ID, raw)
	}
}

// sameURL reports whether raw is the consumer's url: as shown (its
// password as ***, which changes nothing), or as sealed.
func (p *Plane) sameURL(cs intake.Consumer, raw string) bool {
	if raw == cs.URL {
		return true
	}
	if len(cs.SealedURL) == 0 {
		return false
	}
	whole, err := p.sealer.ConsumerURL(cs)
	return err == nil && whole == raw
}

// checkURL holds a consumer URL to its length and the address policy.
// Resolving the host is the slowest check, so it comes last among a
// request's, and a resolver that does not answer cannot hold the request.
func (p *Plane) checkURL(ctx context.Context, u string) error {
	if u == "" {
		return intake.Errorf(intake.EINVALID, "url is required")
	}
	if len(u) > maxConsumerURL {
		return intake.Errorf(intake.EINVALID, "url must be at most %d bytes", maxConsumerURL)
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	err := p.policy.CheckURL(rctx, u, p.brokers)
	cancel()
	if err != nil {
		return intake.Errorf(intake.EINVALID, "%v", err)
	}
	return nil
}

// checkRules compiles a consumer's filter and transform as they would run
// for org.
func (p *Plane) checkRules(ctx context.Context, org, filter, transform string) error {
	if filter != "" {
		if err := p.rules.Check(ctx, org, rules.KindFilter, filter); err != nil {
			return err
		}
	}
	if transform != "" {
		if err := p.rules.Check(ctx, org, rules.KindTransform, transform); err != nil {
			return err
		}
	}
	return nil
}

// ruleChange is the audit detail of a rule that changed: its old and new
// source, quoted; nothing when it stayed the same.
func ruleChange(name, old, new string) string {
	if old == new {
		return ""
	}
	return fmt.Sprintf(" %s: %q → %q", name, old, new)
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
	Name       *string
	App        *string
	URL        *string
	EventTypes *[]string
	Completion *bool
	Enabled    *bool
	Filter     *string // "" removes the filter
	Transform  *string // "" removes the transform
	ControlsUpdate
	// Version, when set, is the version the change is made over (the
	// ETag the caller read): the change is refused if the consumer has
	// changed since. 0: over whatever is there, however often it moves.
	Version int64
}

// UpdateConsumer changes a consumer's settings, checked as on creation; a
// change of a rule is audited with its old and new source.
func (p *Plane) UpdateConsumer(ctx context.Context, c Caller, id string, u ConsumerUpdate) (intake.Consumer, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Consumer{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Consumer{}, err
	}
	settings := u
	settings.Version = 0
	if settings == (ConsumerUpdate{}) {
		return intake.Consumer{}, intake.Errorf(intake.EINVALID, "give at least one setting to change: name, url, event_types, completion, enabled, "+
			"filter, transform, paused, rate_per_sec, max_in_flight, ordering, retry, breaker_failures or auto_disable_after")
	}
	return compareAndSet(u.Version, func() (intake.Consumer, error) { return p.updateConsumer(ctx, c, id, u) })
}

// updateConsumer is one try of UpdateConsumer, over the version it reads.
func (p *Plane) updateConsumer(ctx context.Context, c Caller, id string, u ConsumerUpdate) (intake.Consumer, error) {
	cs, err := p.store.Consumer(ctx, c.Scope, id)
	if err != nil {
		return intake.Consumer{}, err
	}
	if err := checkVersion("consumer", u.Version, cs.Version); err != nil {
		return intake.Consumer{}, err
	}
	old := cs
	if u.Name != nil {
		if err := intake.CheckName("name", *u.Name); err != nil {
			return intake.Consumer{}, err
		}
		cs.Name = *u.Name
	}
	if u.App != nil {
		if err := intake.CheckName("app", *u.App); err != nil {
			return intake.Consumer{}, err
		}
		cs.App = *u.App
	}
	if u.EventTypes != nil {
		if err := checkEventTypes(*u.EventTypes); err != nil {
			return intake.Consumer{}, err
		}
		cs.EventTypes = *u.EventTypes
	}
	if u.Completion != nil {
		cs.Completion = *u.Completion
	}
	if u.Enabled != nil {
		cs.Enabled = *u.Enabled
	}
	if u.Filter != nil {
		cs.Filter = *u.Filter
	}
	if u.Transform != nil {
		cs.Transform = *u.Transform
	}
	if err := p.checkRules(ctx, cs.OrgID, changed(old.Filter, cs.Filter), changed(old.Transform, cs.Transform)); err != nil {
		return intake.Consumer{}, err
	}
	if err := p.applyControls(ctx, cs.OrgID, &cs.Controls, u.ControlsUpdate); err != nil {
		return intake.Consumer{}, err
	}
	if u.URL != nil && !p.sameURL(cs, *u.URL) {
		if err := p.checkURL(ctx, *u.URL); err != nil {
			return intake.Consumer{}, err
		}
		p.setURL(&cs, *u.URL)
	}
	a := p.entry(c, cs.OrgID, "consumer.update", "consumer", cs.ID, consumerChanges(old, cs))
	if err := p.store.UpdateConsumer(ctx, c.Scope, cs, a); err != nil {
		return intake.Consumer{}, err
	}
	cs.Version++
	if !cs.Enabled || cs.URL != old.URL || !bytes.Equal(cs.SealedURL, old.SealedURL) {
		// A broker connection kept for it is closed now (the router also
		// closes one when it finds the consumer disabled or gone).
		p.sender.Forget(cs.ID)
	}
	return cs, nil
}

// changed is new when it differs from old, else "" (nothing to check).
func changed(old, new string) string {
	if old == new {
		return ""
	}
	return new
}

// consumerChanges is the audit detail of an update: each setting that
// changed, the rules with their old and new source.
func consumerChanges(old, new intake.Consumer) string {
	var d []string
	if old.Name != new.Name {
		d = append(d, fmt.Sprintf("name=%s", new.Name))
	}
	if old.App != new.App {
		d = append(d, fmt.Sprintf("app=%s", new.App))
	}
	if old.URL != new.URL {
		d = append(d, fmt.Sprintf("url=%s", new.URL))
	}
	if strings.Join(old.EventTypes, ",") != strings.Join(new.EventTypes, ",") {
		d = append(d, fmt.Sprintf("event_types=%s", strings.Join(new.EventTypes, ",")))
	}
	if old.Completion != new.Completion {
		d = append(d, fmt.Sprintf("completion=%v", new.Completion))
	}
	if old.Enabled != new.Enabled {
		d = append(d, fmt.Sprintf("enabled=%v", new.Enabled))
	}
	d = append(d, controlChanges(old.Controls, new.Controls)...)
	detail := strings.Join(d, " ")
	return strings.TrimSpace(detail + ruleChange("filter", old.Filter, new.Filter) + ruleChange("transform", old.Transform, new.Transform) +
		ruleChange("ordering", old.Controls.Ordering, new.Controls.Ordering))
}

// Rotation bounds: the old secret may be kept beside the new one for a
// consumer to switch over, at most maxKeepOld.
const (
	defaultKeepOld = 24 * time.Hour
	maxKeepOld     = 30 * 24 * time.Hour
)

// RotateConsumerSecret gives a consumer a new signing secret, returned
// once. For keepOld (nil: 24 h; 0: not at all) deliveries carry a signature
// under the old secret too, so the consumer can switch without refusing
// one.
func (p *Plane) RotateConsumerSecret(ctx context.Context, c Caller, id string, keepOld *time.Duration) (string, time.Time, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return "", time.Time{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return "", time.Time{}, err
	}
	keep := defaultKeepOld
	if keepOld != nil {
		keep = *keepOld
	}
	if keep < 0 || keep > maxKeepOld {
		return "", time.Time{}, intake.Errorf(intake.EINVALID, "keep_old_for must be between 0s and %s", maxKeepOld)
	}
	cs, err := p.store.Consumer(ctx, c.Scope, id)
	if err != nil {
		return "", time.Time{}, err
	}
	secret := delivery.NewSecret()
	sealed := p.sealer.Seal([]byte(secret), []byte(cs.ID))
	var old []byte
	var until time.Time
	if keep > 0 {
		old, until = cs.SealedSecret, p.now().Add(keep)
	}
	a := p.entry(c, cs.OrgID, "consumer.secret.rotate", "consumer", cs.ID, "keep_old_for=", keep)
	if err := p.store.RotateConsumerSecret(ctx, c.Scope, cs.ID, sealed, old, until, a); err != nil {
		return "", time.Time{}, err
	}
	return secret, until, nil
}

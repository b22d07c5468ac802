package control

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/rules"
)

// NewConnection is what a connection is created from. OrgID may be empty
// for an org's key.
type NewConnection struct {
	OrgID    string
	Provider string
	Name     string
	Secrets  []string
	Config   json.RawMessage
	Filter   string // CEL over each interpreted event; empty: all
}

// CreateConnection links an org to a provider account; its secrets are
// sealed to the connection's id and never returned.
func (p *Plane) CreateConnection(ctx context.Context, c Caller, n NewConnection) (intake.Connection, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Connection{}, err
	}
	if err := intake.CheckName("name", n.Name); err != nil {
		return intake.Connection{}, err
	}
	if n.Provider == "" {
		return intake.Connection{}, intake.Errorf(intake.EINVALID, "provider is required (one of %s)", strings.Join(provider.Names(), ", "))
	}
	adapter, ok := provider.Lookup(n.Provider)
	if !ok {
		return intake.Connection{}, intake.Errorf(intake.EINVALID, "unknown provider %.64q (one of %s)", n.Provider, strings.Join(provider.Names(), ", "))
	}
	config, err := provider.CheckConfig(adapter, n.Config)
	if err != nil {
		return intake.Connection{}, err
	}
	orgID, err := orgFor(c, n.OrgID)
	if err != nil {
		return intake.Connection{}, err
	}
	if err := p.checkConnectionRules(ctx, orgID, n.Provider, config, n.Filter); err != nil {
		return intake.Connection{}, err
	}
	if err := provider.CheckSecrets(n.Provider, n.Secrets); err != nil {
		return intake.Connection{}, err
	}
	// The id is made first because the sealed secrets are bound to it.
	cn := intake.Connection{ID: intake.NewID(), OrgID: orgID, Provider: n.Provider, Name: n.Name, Config: config, CreatedAt: p.now(),
		Filter: n.Filter}
	if cn.SealedSecrets, err = p.sealer.SealConnectionSecrets(cn, nonNil(n.Secrets)); err != nil {
		return intake.Connection{}, err
	}
	a := p.entry(c, cn.OrgID, "connection.create", "connection", cn.ID, "provider=", cn.Provider, " secrets=", len(n.Secrets),
		ruleChange("filter", "", cn.Filter), ruleChange("script", "", script(cn.Config)))
	if err := p.store.CreateConnection(ctx, cn, a); err != nil {
		return intake.Connection{}, err
	}
	return cn, nil
}

// ConnectionUpdate is a change to a connection; nil leaves a setting as it
// is.
type ConnectionUpdate struct {
	Name   *string
	Config json.RawMessage // the whole provider config; nil: unchanged
	Filter *string         // "" removes the filter
	// Script sets config.script alone (hmac and none); "" removes it.
	Script *string
	// Version, when set, is the version the change is made over (the
	// ETag the caller read): the change is refused if the connection has
	// changed since. 0: over whatever is there.
	Version int64
}

// UpdateConnection changes a connection's name, provider config (an hmac
// or none connection's interpret script among it) or filter, checked as on
// creation; a changed rule is audited with its old and new source.
func (p *Plane) UpdateConnection(ctx context.Context, c Caller, id string, u ConnectionUpdate) (intake.Connection, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Connection{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Connection{}, err
	}
	return compareAndSet(u.Version, func() (intake.Connection, error) { return p.updateConnection(ctx, c, id, u) })
}

// updateConnection is one try of UpdateConnection, over the version it
// reads.
func (p *Plane) updateConnection(ctx context.Context, c Caller, id string, u ConnectionUpdate) (intake.Connection, error) {
	cn, err := p.store.Connection(ctx, c.Scope, id)
	if err != nil {
		return intake.Connection{}, err
	}
	if err := checkVersion("connection", u.Version, cn.Version); err != nil {
		return intake.Connection{}, err
	}
	old := cn
	if u.Name != nil {
		if err := intake.CheckName("name", *u.Name); err != nil {
			return intake.Connection{}, err
		}
		cn.Name = *u.Name
	}
	if u.Config != nil {
		adapter, _ := provider.Lookup(cn.Provider)
		if cn.Config, err = provider.CheckConfig(adapter, u.Config); err != nil {
			return intake.Connection{}, err
		}
	}
	if u.Script != nil {
		if cn.Config, err = withScript(cn.Config, *u.Script); err != nil {
			return intake.Connection{}, err
		}
	}
	if u.Filter != nil {
		cn.Filter = *u.Filter
	}
	if err := p.checkConnectionRules(ctx, cn.OrgID, cn.Provider, cn.Config, changed(old.Filter, cn.Filter)); err != nil {
		return intake.Connection{}, err
	}
	cn.FormerCredentialHeaders = formerCredentials(old, cn)
	detail := ""
	if old.Name != cn.Name {
		detail = "name=" + cn.Name
	}
	if string(old.Config) != string(cn.Config) {
		detail += " config changed"
	}
	detail += ruleChange("filter", old.Filter, cn.Filter) + ruleChange("script", script(old.Config), script(cn.Config))
	a := p.entry(c, cn.OrgID, "connection.update", "connection", cn.ID, strings.TrimSpace(detail))
	if err := p.store.UpdateConnection(ctx, c.Scope, cn, a); err != nil {
		return intake.Connection{}, err
	}
	cn.Version++
	return cn, nil
}

// checkConnectionRules compiles a connection's filter and, for the
// providers described without code (hmac, none), its interpret script, as
// they would run for org.
func (p *Plane) checkConnectionRules(ctx context.Context, org, prov string, config json.RawMessage, filter string) error {
	if filter != "" {
		if err := p.rules.Check(ctx, org, rules.KindFilter, filter); err != nil {
			return err
		}
	}
	src := script(config)
	if src == "" {
		return nil
	}
	if !DescribedByScript(prov) {
		return intake.Errorf(intake.EINVALID, "config.script describes a provider intake does not know; it is for hmac and none connections, not %s", prov)
	}
	return p.rules.Check(ctx, org, rules.KindInterpret, src)
}

// DescribedByScript reports whether a provider's connections may carry an
// interpret script: the generic ones, hmac and none.
func DescribedByScript(prov string) bool { return prov == "hmac" || prov == "none" }

// Script is a connection's interpret script, or "".
func Script(cn intake.Connection) string { return script(cn.Config) }

// Setting is one setting of a connection's config as operators read it.
type Setting struct {
	Key string
	// Value is the setting as JSON; nil for a credential, which is shown
	// only as set.
	Value json.RawMessage
	// Credential marks a setting that carries a credential (redact.Setting).
	Credential bool
}

// Settings lists a connection's config settings in key order, each that
// carries a credential marked and without its value; a config that does
// not parse lists none.
func Settings(cn intake.Connection) []Setting {
	var m map[string]json.RawMessage
	if json.Unmarshal(cn.Config, &m) != nil {
		return nil
	}
	out := make([]Setting, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s := Setting{Key: k, Value: m[k]}
		if redact.Setting(k) {
			s.Value, s.Credential = nil, true
		}
		out = append(out, s)
	}
	return out
}

// withScript is config with its script set to src ("" removes it).
func withScript(config json.RawMessage, src string) (json.RawMessage, error) {
	cfg, err := provider.ParseConfig(config)
	if err != nil {
		return nil, intake.Errorf(intake.EINVALID, "%v", err)
	}
	if cfg == nil {
		cfg = provider.Config{}
	}
	if strings.TrimSpace(src) == "" {
		delete(cfg, "script")
	} else {
		cfg["script"] = src
	}
	return json.Marshal(cfg)
}

// script is a connection config's interpret script, or "".
func script(config json.RawMessage) string {
	cfg, err := provider.ParseConfig(config)
	if err != nil {
		return ""
	}
	return cfg.String("script", "")
}

// ReplaceSecrets replaces a connection's signing secrets; during a
// provider's rotation the old and the new are given together. The next
// request verifies against the new list.
func (p *Plane) ReplaceSecrets(ctx context.Context, c Caller, id string, secrets []string) (intake.Connection, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return intake.Connection{}, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return intake.Connection{}, err
	}
	cn, err := p.store.Connection(ctx, c.Scope, id)
	if err != nil {
		return intake.Connection{}, err
	}
	if err := provider.CheckSecrets(cn.Provider, secrets); err != nil {
		return intake.Connection{}, err
	}
	if cn.SealedSecrets, err = p.sealer.SealConnectionSecrets(cn, nonNil(secrets)); err != nil {
		return intake.Connection{}, err
	}
	a := p.entry(c, cn.OrgID, "connection.secrets.replace", "connection", cn.ID, "secrets=", len(secrets))
	if err := p.store.ReplaceConnectionSecrets(ctx, c.Scope, cn.ID, cn.SealedSecrets, a); err != nil {
		return intake.Connection{}, err
	}
	return cn, nil
}

// AdoptHandshakeSecret adds to a connection the signing secret its provider
// handed over in a recorded handshake (Asana's X-Hook-Secret). The secret
// goes from the stored request into the sealed list without being shown to
// anyone; the request's header stays hidden as every credential is. added
// is false when the connection already had it.
func (p *Plane) AdoptHandshakeSecret(ctx context.Context, c Caller, connectionID, messageID string) (cn intake.Connection, added bool, err error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return cn, false, err
	}
	if err := intake.CheckID("id", connectionID); err != nil {
		return cn, false, err
	}
	if !intake.ValidID(messageID) {
		return cn, false, intake.Errorf(intake.EINVALID, "message_id must be a message's id")
	}
	if cn, err = p.store.Connection(ctx, c.Scope, connectionID); err != nil {
		return cn, false, err
	}
	a, _ := provider.Lookup(cn.Provider)
	hs, ok := a.(provider.HandshakeSecreter)
	if !ok {
		return cn, false, intake.Errorf(intake.EINVALID, "provider %s does not hand its secret over in a handshake; set its secrets instead", cn.Provider)
	}
	m, err := p.store.Message(ctx, c.Scope, messageID)
	if err != nil {
		return cn, false, err
	}
	if m.ConnectionID != cn.ID {
		return cn, false, intake.Errorf(intake.EINVALID, "message %s was not received for connection %s", m.ID, cn.ID)
	}
	body, header, err := p.readBody(ctx, c.Scope, m.ID)
	if err != nil {
		return cn, false, err
	}
	secret := hs.HandshakeSecret(&provider.Request{Method: m.Method, Header: header, Body: body, ReceivedAt: m.ReceivedAt})
	if secret == "" {
		return cn, false, intake.Errorf(intake.EINVALID, "message %s is not a %s handshake carrying a secret", m.ID, cn.Provider)
	}
	opened, err := p.sealer.ConnectionSecrets(cn)
	if err != nil {
		return cn, false, err
	}
	secrets := make([]string, 0, len(opened)+1)
	for _, s := range opened {
		if string(s) == secret {
			return cn, false, nil
		}
		secrets = append(secrets, string(s))
	}
	secrets = append(secrets, secret)
	if err := provider.CheckSecrets(cn.Provider, secrets); err != nil {
		return cn, false, err
	}
	if cn.SealedSecrets, err = p.sealer.SealConnectionSecrets(cn, secrets); err != nil {
		return cn, false, err
	}
	entry := p.entry(c, cn.OrgID, "connection.secrets.adopt", "connection", cn.ID, "message=", m.ID)
	if err := p.store.ReplaceConnectionSecrets(ctx, c.Scope, cn.ID, cn.SealedSecrets, entry); err != nil {
		return cn, false, err
	}
	return cn, true, nil
}

// DisableConnection stops a connection's webhooks: every enabled endpoint
// of it refuses them from now on. It returns how many it disabled.
func (p *Plane) DisableConnection(ctx context.Context, c Caller, id string) (int, error) {
	if err := c.may(intake.RoleAdmin); err != nil {
		return 0, err
	}
	if err := intake.CheckID("id", id); err != nil {
		return 0, err
	}
	if _, err := p.store.Connection(ctx, c.Scope, id); err != nil {
		return 0, err
	}
	eps, err := p.store.ListEndpoints(ctx, c.Scope)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range eps {
		if e.ConnectionID != id || !e.Enabled {
			continue
		}
		disabled, err := compareAndSet(0, func() (bool, error) {
			e, err := p.store.Endpoint(ctx, c.Scope, e.ID)
			if err != nil || !e.Enabled {
				return false, err
			}
			e.Enabled = false
			a := p.entry(c, e.OrgID, "endpoint.update", "endpoint", e.ID, "enabled=false (connection disabled)")
			return true, p.store.UpdateEndpoint(ctx, c.Scope, e, a)
		})
		if err != nil {
			return n, err
		}
		if disabled {
			n++
		}
	}
	return n, nil
}

// SecretCount is how many signing secrets a connection holds; ok is false
// when they do not open (the master key changed). Counting them means
// opening them; the plaintext goes no further than this function.
func (p *Plane) SecretCount(cn intake.Connection) (n int, ok bool) {
	secrets, err := p.sealer.ConnectionSecrets(cn)
	if err != nil {
		return 0, false
	}
	return len(secrets), true
}

// nonNil keeps an empty secret list sealed as [] rather than null.
func nonNil(secrets []string) []string {
	if secrets == nil {
		return []string{}
	}
	return secrets
}

// formerCredentials are the header names cn made credentials before this
// change and makes no more: once a credential, a header name stays
// hidden on the messages stored while it was one.
func formerCredentials(old, cn intake.Connection) []string {
	now := provider.CredentialHeaders(intake.Connection{Provider: cn.Provider, Config: cn.Config})
	out := slices.Clone(old.FormerCredentialHeaders)
	for _, name := range provider.CredentialHeaders(old) {
		if !slices.ContainsFunc(now, func(n string) bool { return strings.EqualFold(n, name) }) &&
			!slices.ContainsFunc(out, func(n string) bool { return strings.EqualFold(n, name) }) {
			out = append(out, name)
		}
	}
	return out
}

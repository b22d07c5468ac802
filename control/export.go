package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// Export writes the orgs the caller may see (staff: every org, or the one
// orgID names) as a Document that Apply takes back unchanged. Secrets are
// never written: each stored one is a ${env:…} placeholder named after its
// org and connection, for the operator to fill in. Unnamed endpoints are
// not managed by apply and are left out.
func (p *Plane) Export(ctx context.Context, c Caller, orgID string) (Document, error) {
	if err := c.may(intake.RoleViewer); err != nil {
		return Document{}, err
	}
	return budgeted(ctx, p, c, func(ctx context.Context) (Document, error) { return p.export(ctx, c, orgID) })
}

func (p *Plane) export(ctx context.Context, c Caller, orgID string) (Document, error) {
	if orgID != "" {
		if err := intake.CheckID("org_id", orgID); err != nil {
			return Document{}, err
		}
	}
	orgs, err := p.store.ListOrgs(ctx, c.Scope)
	if err != nil {
		return Document{}, err
	}
	doc := Document{Orgs: []OrgSpec{}}
	for _, o := range orgs {
		if orgID != "" && o.ID != orgID {
			continue
		}
		spec, err := p.exportOrg(ctx, o)
		if err != nil {
			return Document{}, err
		}
		doc.Orgs = append(doc.Orgs, spec)
	}
	if orgID != "" && len(doc.Orgs) == 0 {
		return Document{}, intake.Errorf(intake.ENOTFOUND, "org %s not found", orgID)
	}
	return doc, nil
}

func (p *Plane) exportOrg(ctx context.Context, o intake.Org) (OrgSpec, error) {
	spec := OrgSpec{Name: o.Name}
	spec.BodyRetention, spec.Retention = durationText(o.BodyRetention), durationText(o.Retention)
	sc := intake.Scope{OrgID: o.ID}
	conns, err := p.store.ListConnections(ctx, sc)
	if err != nil {
		return spec, err
	}
	eps, err := p.store.ListEndpoints(ctx, sc)
	if err != nil {
		return spec, err
	}
	consumers, err := p.store.ListConsumers(ctx, sc)
	if err != nil {
		return spec, err
	}
	for _, cn := range conns {
		cs := ConnectionSpec{Name: cn.Name, Provider: cn.Provider, Filter: cn.Filter}
		if err := json.Unmarshal(cn.Config, &cs.Config); err != nil && len(cn.Config) > 0 {
			return spec, fmt.Errorf("connection %s config: %w", cn.ID, err)
		}
		if len(cs.Config) == 0 {
			cs.Config = nil
		}
		n, _ := p.SecretCount(cn)
		for i := range n {
			cs.Secrets = append(cs.Secrets, SecretPlaceholder(o.Name, cn.Name, i))
		}
		for _, e := range eps {
			if e.ConnectionID != cn.ID || e.Name == "" {
				continue
			}
			cs.Endpoints = append(cs.Endpoints, EndpointSpec{Name: e.Name, Enabled: &e.Enabled, MaxBodyBytes: &e.MaxBodyBytes,
				RatePerSec: &e.RatePerSec, Burst: &e.Burst})
		}
		spec.Connections = append(spec.Connections, cs)
	}
	switch n, err := p.store.NotificationSettings(ctx, sc, o.ID); {
	case err == nil:
		spec.Notifications = &NotificationsSpec{URL: n.URL, Topics: n.Topics}
		if len(n.SealedURL) > 0 {
			spec.Notifications.URL = "${env:" + envName(o.Name) + "_NOTIFICATIONS_URL}"
		}
		if len(n.SealedSlackURL) > 0 {
			spec.Notifications.SlackWebhookURL = "${env:" + envName(o.Name) + "_SLACK_WEBHOOK_URL}"
		}
	case intake.ErrorCode(err) != intake.ENOTFOUND:
		return spec, err
	}
	for _, cs := range consumers {
		ctl := cs.Controls
		url := cs.URL
		if len(cs.SealedURL) > 0 {
			// Its credentials stay sealed: the file names where to find them.
			url = "${env:" + envName(o.Name) + "_" + envName(cs.Name) + "_URL}"
		}
		spec.Consumers = append(spec.Consumers, ConsumerSpec{Name: cs.Name, App: cs.App, URL: url, EventTypes: cs.EventTypes,
			Completion: cs.Completion, Enabled: &cs.Enabled, Filter: cs.Filter, Transform: cs.Transform,
			Paused: ctl.Paused, RatePerSec: ctl.RatePerSec, MaxInFlight: ctl.MaxInFlight, Ordering: ctl.Ordering,
			RetryAttempts: ctl.Retry.Attempts, RetryBase: durationText(ctl.Retry.Base), BreakerFailures: ctl.BreakerFailures,
			AutoDisableAfter: durationText(ctl.AutoDisableAfter)})
	}
	return spec, nil
}

// durationText writes a retention as an operator would: "720h", not
// "720h0m0s"; zero (the server's default) as "".
func durationText(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// SecretPlaceholder is the ${env:…} an export writes for a connection's
// i-th secret: ACME_STRIPE_LIVE_SECRET, then …_SECRET_2 and on.
func SecretPlaceholder(org, connection string, i int) string {
	name := envName(org) + "_" + envName(connection) + "_SECRET"
	if i > 0 {
		name += fmt.Sprintf("_%d", i+1)
	}
	return "${env:" + name + "}"
}

// envName makes a name an environment variable's: upper case letters,
// digits and underscores.
func envName(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s), "_")
}

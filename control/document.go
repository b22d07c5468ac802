package control

import (
	"time"

	"github.com/intakehq/intake"
)

// Document is configuration as code: the orgs, connections, endpoints and
// consumers (with their rules) that `intake apply` makes true and `intake
// export` writes, matched by name within an org. It is the same in YAML
// (the file) and JSON (the API); docs/intake.schema.json describes it.
type Document struct {
	Orgs []OrgSpec `json:"orgs" yaml:"orgs"`
}

// OrgSpec is one org as a document declares it: its retention and what it
// holds. Empty retention is the server's default.
type OrgSpec struct {
	Name          string           `json:"name" yaml:"name"`
	BodyRetention string           `json:"body_retention,omitempty" yaml:"body_retention,omitempty"`
	Retention     string           `json:"retention,omitempty" yaml:"retention,omitempty"`
	Connections   []ConnectionSpec `json:"connections,omitempty" yaml:"connections,omitempty"`
	Consumers     []ConsumerSpec   `json:"consumers,omitempty" yaml:"consumers,omitempty"`
	// Notifications is where the org's operational notifications go;
	// absent leaves them as they are.
	Notifications *NotificationsSpec `json:"notifications,omitempty" yaml:"notifications,omitempty"`
}

// NotificationsSpec is an org's notification settings as a document
// declares them. The Slack URL is a credential: a file gives it as
// ${env:…} or ${file:…}, resolved on the operator's machine.
type NotificationsSpec struct {
	URL             string   `json:"url,omitempty" yaml:"url,omitempty"`
	SlackWebhookURL string   `json:"slack_webhook_url,omitempty" yaml:"slack_webhook_url,omitempty"`
	Topics          []string `json:"topics" yaml:"topics"`
}

// ConnectionSpec is a connection as a document declares it. Secrets, when
// given, are the whole signing secret list; when absent a new connection
// gets none and an existing one keeps its own (a secret adopted from a
// handshake, say). Config is the provider config, config.script among it.
type ConnectionSpec struct {
	Name      string         `json:"name" yaml:"name"`
	Provider  string         `json:"provider" yaml:"provider"`
	Secrets   []string       `json:"secrets,omitempty" yaml:"secrets,omitempty"`
	Config    map[string]any `json:"config,omitempty" yaml:"config,omitempty"`
	Filter    string         `json:"filter,omitempty" yaml:"filter,omitempty"`
	Endpoints []EndpointSpec `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
}

// EndpointSpec is a named endpoint of a connection; an absent setting is
// the default a new endpoint gets. Its token is minted by the server.
type EndpointSpec struct {
	Name         string   `json:"name" yaml:"name"`
	Enabled      *bool    `json:"enabled,omitempty" yaml:"enabled,omitempty"`
	MaxBodyBytes *int64   `json:"max_body_bytes,omitempty" yaml:"max_body_bytes,omitempty"`
	RatePerSec   *float64 `json:"rate_per_sec,omitempty" yaml:"rate_per_sec,omitempty"`
	Burst        *int     `json:"burst,omitempty" yaml:"burst,omitempty"`
}

// ConsumerSpec is a consumer as a document declares it; absent Enabled is
// true. Its signing secret is minted by the server.
type ConsumerSpec struct {
	Name string `json:"name" yaml:"name"`
	// RenamedFrom is the name the consumer had: when no consumer has Name
	// yet, the one named RenamedFrom is renamed (keeping its id, secret and
	// history) rather than a new one created beside it.
	RenamedFrom string   `json:"renamed_from,omitempty" yaml:"renamed_from,omitempty"`
	App         string   `json:"app" yaml:"app"`
	URL         string   `json:"url" yaml:"url"`
	EventTypes  []string `json:"event_types" yaml:"event_types"`
	Completion  bool     `json:"completion,omitempty" yaml:"completion,omitempty"`
	Enabled     *bool    `json:"enabled,omitempty" yaml:"enabled,omitempty"`
	Filter      string   `json:"filter,omitempty" yaml:"filter,omitempty"`
	Transform   string   `json:"transform,omitempty" yaml:"transform,omitempty"`
	// Delivery controls (DESIGN §9); absent is none, or the server's
	// default.
	Paused           bool    `json:"paused,omitempty" yaml:"paused,omitempty"`
	RatePerSec       float64 `json:"rate_per_sec,omitempty" yaml:"rate_per_sec,omitempty"`
	MaxInFlight      int     `json:"max_in_flight,omitempty" yaml:"max_in_flight,omitempty"`
	Ordering         string  `json:"ordering,omitempty" yaml:"ordering,omitempty"`
	RetryAttempts    int     `json:"retry_attempts,omitempty" yaml:"retry_attempts,omitempty"`
	RetryBase        string  `json:"retry_base,omitempty" yaml:"retry_base,omitempty"`
	BreakerFailures  int     `json:"breaker_failures,omitempty" yaml:"breaker_failures,omitempty"`
	AutoDisableAfter string  `json:"auto_disable_after,omitempty" yaml:"auto_disable_after,omitempty"`
}

// controls reads the spec's delivery controls.
func (s ConsumerSpec) controls() (intake.Controls, error) {
	c := intake.Controls{Paused: s.Paused, RatePerSec: s.RatePerSec, MaxInFlight: s.MaxInFlight, Ordering: s.Ordering,
		Retry: intake.RetryPolicy{Attempts: s.RetryAttempts}, BreakerFailures: s.BreakerFailures}
	for _, d := range []struct {
		name, v string
		to      *time.Duration
	}{{"retry_base", s.RetryBase, &c.Retry.Base}, {"auto_disable_after", s.AutoDisableAfter, &c.AutoDisableAfter}} {
		if d.v == "" {
			continue
		}
		v, err := ParseDuration(d.name, d.v, "72h")
		if err != nil {
			return c, err
		}
		*d.to = v
	}
	return c, c.Validate()
}

// controlsUpdate is the ControlsUpdate that makes a consumer's controls c.
func controlsUpdate(c intake.Controls) ControlsUpdate {
	return ControlsUpdate{Paused: &c.Paused, RatePerSec: &c.RatePerSec, MaxInFlight: &c.MaxInFlight, Ordering: &c.Ordering,
		RetryAttempts: &c.Retry.Attempts, RetryBase: &c.Retry.Base, BreakerFailures: &c.BreakerFailures,
		AutoDisableAfter: &c.AutoDisableAfter}
}

// Plan is what an apply does, or on a dry run would do: every thing the
// document names, and with prune every thing it would delete, in the order
// the changes are made.
type Plan struct {
	DryRun bool `json:"dry_run"`
	// Unchanged is true when the store already holds what the document
	// declares: the apply changes (or, on a dry run, would change) nothing.
	Unchanged bool     `json:"unchanged"`
	Changes   []Change `json:"changes"`
}

// What a change does.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionDelete    = "delete"
	ActionUnchanged = "unchanged"
)

// Change is one line of a plan. Fields names the settings an update
// changes ("secrets" for the secrets, never their values). What the server
// mints on creation (an org's first API key, an endpoint's token and URL, a
// consumer's signing secret) is in the plan that created it, once.
type Change struct {
	Action     string   `json:"action"`
	Kind       string   `json:"kind"` // org, connection, endpoint, consumer, notifications
	Org        string   `json:"org"`
	Connection string   `json:"connection,omitempty"` // an endpoint's
	Name       string   `json:"name"`
	ID         string   `json:"id,omitempty"` // empty for a create on a dry run
	Fields     []string `json:"fields,omitempty"`

	APIKey        string `json:"api_key,omitempty"`
	Token         string `json:"token,omitempty"`
	URL           string `json:"url,omitempty"`
	SigningSecret string `json:"signing_secret,omitempty"`
}

// ApplyOptions choose how an apply runs: DryRun writes nothing, Prune
// deletes what an org holds and the document does not name.
type ApplyOptions struct {
	DryRun bool
	Prune  bool
}

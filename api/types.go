package api

import (
	"cmp"
	"encoding/json"
	"net/http"
	"time"

	"github.com/intakehq/intake"
)

// The types below are the admin API's wire format: what the server writes
// and what the CLI reads. Times are RFC 3339 in UTC.

// ErrorBody is the answer to every failed API request.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail names what went wrong: a code for programs, a message for people.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// List is one page of a list; NextCursor is empty on the last page.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// CreateOrgRequest asks for a new tenant.
type CreateOrgRequest struct {
	Name string `json:"name"`
}

// Org is a tenant as the API shows it. APIKey is only set in the answer that
// created it: the server keeps its hash alone.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	APIKey    string    `json:"api_key,omitempty"`
	// BodyRetention and Retention are the org's own retention ("168h"),
	// empty where the server's default applies.
	BodyRetention string `json:"body_retention,omitempty"`
	Retention     string `json:"retention,omitempty"`
}

// UpdateOrgRequest renames an org (staff only; unique among orgs) and sets
// its own retention; "" or "0s" returns a retention to the server's
// default. Absent fields stay.
type UpdateOrgRequest struct {
	Name          *string `json:"name"`
	BodyRetention *string `json:"body_retention"`
	Retention     *string `json:"retention"`
}

// CreateConnectionRequest links an org to a provider account. OrgID may be
// omitted with an org's API key.
type CreateConnectionRequest struct {
	OrgID    string          `json:"org_id"`
	Provider string          `json:"provider"`
	Name     string          `json:"name"`
	Secrets  []string        `json:"secrets"`
	Config   json.RawMessage `json:"config,omitempty"`
}

// SecretsRequest replaces a connection's signing secrets; several may be
// active at once while a provider rotates.
type SecretsRequest struct {
	Secrets []string `json:"secrets"`
}

// Replay is a window replay's progress.
type Replay struct {
	ID string `json:"id"`
	// Kind is window (an endpoint's window), replay (a bulk replay by
	// search) or reroute (a bulk re-route by search).
	Kind string `json:"kind"`
	// EndpointID, Since and Until are a window replay's.
	EndpointID string     `json:"endpoint_id,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	// Total is how many rows the job selected when it was made; Done how
	// many it has taken so far.
	Total    int  `json:"total"`
	Done     int  `json:"done"`
	Finished bool `json:"finished"`
	// State is running, done or failed (Error says why).
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

func replayView(j intake.ReplayJob) Replay {
	v := Replay{ID: j.ID, Kind: string(cmp.Or(j.Kind, intake.JobWindow)), EndpointID: j.EndpointID,
		Total: j.Total, Done: j.Done, Finished: j.Finished(), State: j.State(), Error: j.Error, UpdatedAt: j.UpdatedAt.UTC()}
	if !j.Since.IsZero() {
		since, until := j.Since.UTC(), j.Until.UTC()
		v.Since, v.Until = &since, &until
	}
	return v
}

// AdoptSecretRequest names a recorded handshake whose secret a connection
// takes on (providers that hand their secret over in a handshake: Asana).
type AdoptSecretRequest struct {
	MessageID string `json:"message_id"`
}

// Connection is a connection as the API shows it: its secrets never leave the
// server, only how many there are. SecretCount is nil when the sealed secrets
// cannot be opened (the master key changed).
type Connection struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"org_id"`
	Provider    string          `json:"provider"`
	Name        string          `json:"name"`
	Config      json.RawMessage `json:"config"`
	SecretCount *int            `json:"secret_count"`
	CreatedAt   time.Time       `json:"created_at"`
	// Filter is the CEL expression each interpreted event must pass.
	Filter string `json:"filter"`
}

// UpdateConnectionRequest changes a connection's name, provider config
// (config.script for hmac and none) or filter; absent fields stay.
type UpdateConnectionRequest struct {
	Name   *string         `json:"name"`
	Config json.RawMessage `json:"config,omitempty"`
	Filter *string         `json:"filter"`
}

// CreateEndpointRequest asks for a new ingress address. Absent limits take
// the defaults; RatePerSec 0 means no rate limit.
type CreateEndpointRequest struct {
	ConnectionID string   `json:"connection_id"`
	Name         *string  `json:"name,omitempty"`
	MaxBodyBytes *int64   `json:"max_body_bytes,omitempty"`
	RatePerSec   *float64 `json:"rate_per_sec,omitempty"`
	Burst        *int     `json:"burst,omitempty"`
}

// UpdateEndpointRequest changes the fields it sets and leaves the others.
type UpdateEndpointRequest struct {
	Name         *string  `json:"name,omitempty"`
	Enabled      *bool    `json:"enabled,omitempty"`
	MaxBodyBytes *int64   `json:"max_body_bytes,omitempty"`
	RatePerSec   *float64 `json:"rate_per_sec,omitempty"`
	Burst        *int     `json:"burst,omitempty"`
}

// Endpoint is an ingress address as the API shows it. Token and URL are only
// set in the answer that created it: the server keeps the token's hash alone.
type Endpoint struct {
	ID           string    `json:"id"`
	OrgID        string    `json:"org_id"`
	ConnectionID string    `json:"connection_id"`
	Name         string    `json:"name"`
	Provider     string    `json:"provider"`
	Token        string    `json:"token,omitempty"`
	URL          string    `json:"url,omitempty"`
	Enabled      bool      `json:"enabled"`
	MaxBodyBytes int64     `json:"max_body_bytes"`
	RatePerSec   float64   `json:"rate_per_sec"`
	Burst        int       `json:"burst"`
	CreatedAt    time.Time `json:"created_at"`
}

// Message is a received request as lists show it.
type Message struct {
	ID              string    `json:"id"`
	OrgID           string    `json:"org_id"`
	EndpointID      string    `json:"endpoint_id"`
	ConnectionID    string    `json:"connection_id"`
	State           string    `json:"state"`
	Attempt         int       `json:"attempt"`
	MaxAttempts     int       `json:"max_attempts"`
	ReceivedAt      time.Time `json:"received_at"`
	Method          string    `json:"method"`
	Digest          string    `json:"digest"`
	ProviderEventID string    `json:"provider_event_id"`
	ErrorCode       string    `json:"error_code"`
	ErrorMessage    string    `json:"error_message"`
	Outcome         string    `json:"outcome"`
	ReplayOf        string    `json:"replay_of"`
	BodyExpired     bool      `json:"body_expired"`
}

// MessageDetail is one message in full. Credential headers and query
// parameters (Authorization, Cookie, API keys, tokens) are never shown.
type MessageDetail struct {
	Message
	Query       string      `json:"query"`
	Headers     http.Header `json:"headers"`
	EventIDs    []string    `json:"event_ids"`
	BodyExpired bool        `json:"body_expired"`
	Attempts    []Attempt   `json:"attempts"`
}

// Attempt is one settled processing attempt of a message.
type Attempt struct {
	Attempt      int       `json:"attempt"`
	State        string    `json:"state"`
	Outcome      string    `json:"outcome"`
	ErrorCode    string    `json:"error_code"`
	ErrorMessage string    `json:"error_message"`
	At           time.Time `json:"at"`
}

// BodyURL is a signed address that serves a message's raw body without a
// token until ExpiresAt.
type BodyURL struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Event is an interpreted event as lists show it.
type Event struct {
	ID              string          `json:"id"`
	OrgID           string          `json:"org_id"`
	Type            string          `json:"type"`
	Kind            string          `json:"kind"`
	State           string          `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"max_attempts"`
	MessageID       string          `json:"message_id"`
	ConnectionID    string          `json:"connection_id"`
	Provider        string          `json:"provider"`
	ProviderEventID string          `json:"provider_event_id"`
	OccurredAt      time.Time       `json:"occurred_at"`
	ReceivedAt      time.Time       `json:"received_at"`
	Subject         *intake.Subject `json:"subject"`
	Data            json.RawMessage `json:"data"`
	DataTruncated   bool            `json:"data_truncated"`
	Replay          bool            `json:"replay"`
	ReplayOf        string          `json:"replay_of"`
	// DeadRoutes, on a dead event in a list, are the consumers whose
	// attempts it spent, each with its last error.
	DeadRoutes []EventRoute `json:"dead_routes,omitempty"`
}

// EventDetail is one event with its way to each consumer, and every
// delivery attempt made of it, oldest first.
type EventDetail struct {
	Event
	Routes     []EventRoute `json:"routes"`
	Deliveries []Delivery   `json:"deliveries"`
}

// EventRoute is an event's way to one consumer: where it stands, the
// attempts it spent of that consumer's own limit (a re-route starts them
// afresh), and the last call's error.
type EventRoute struct {
	ConsumerID string `json:"consumer_id"`
	// ConsumerName is empty when the consumer was deleted.
	ConsumerName string `json:"consumer_name"`
	State        string `json:"state"`
	Attempt      int    `json:"attempt"`
	// MaxAttempts is the limit Attempt counts toward: the consumer's retry
	// limit now for a route still waiting (0: the consumer was deleted);
	// a dead route's is the limit it died under, a later change of the
	// consumer's retry leaves it as it was.
	MaxAttempts int    `json:"max_attempts"`
	LastError   string `json:"last_error"`
}

// Delivery is one attempt of an event to one consumer. Error says why an
// attempt is to be retried; it is empty when the consumer answered 2xx.
// Outcome dead marks the failed call that spent the consumer's last
// attempt.
type Delivery struct {
	ConsumerID string `json:"consumer_id"`
	// ConsumerName is empty when the consumer was deleted.
	ConsumerName string `json:"consumer_name"`
	Attempt      int    `json:"attempt"`
	// MaxAttempts is the consumer's retry limit in force when the call was
	// made, which Attempt counted toward; a later change of the consumer's
	// retry leaves it as it was (0: not recorded, a delivery from before
	// limits were kept). A re-route starts the count afresh.
	MaxAttempts int       `json:"max_attempts"`
	Outcome     string    `json:"outcome"`
	StatusCode  int       `json:"status_code"`
	LatencyMS   float64   `json:"latency_ms"`
	Error       string    `json:"error"`
	At          time.Time `json:"at"`
	// Response is what an HTTP consumer answered; null for a broker, a
	// call that got no answer, or no call.
	Response *DeliveryResponse `json:"response"`
}

// DeliveryResponse is an HTTP consumer's answer as kept: its status, the
// headers content-type and retry-after (no other, so none that carries a
// credential), and the first 4 KiB of its body.
type DeliveryResponse struct {
	Status int `json:"status"`
	// Headers has at most content-type and retry-after, by lower-case
	// name.
	Headers map[string]string `json:"headers"`
	// Body is the answer's first 4 KiB: as text when UTF-8, else base64
	// (BodyEncoding says which).
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding"`
	// BodyTruncated: the answer went on past what Body holds.
	BodyTruncated bool `json:"body_truncated"`
}

// CreateConsumerRequest registers an app to receive events. OrgID may be
// omitted with an org's API key. EventTypes are exact types
// ("stripe.invoice.paid") or prefixes ("stripe.invoice.*", "github.*", "*").
type CreateConsumerRequest struct {
	OrgID      string   `json:"org_id"`
	Name       string   `json:"name"`
	App        string   `json:"app"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
	Completion bool     `json:"completion"`
	Filter     string   `json:"filter,omitempty"`
	Transform  string   `json:"transform,omitempty"`
	// Enabled false registers the consumer without sending it anything
	// yet; absent is true.
	Enabled *bool `json:"enabled,omitempty"`
	// The delivery controls, as an update sets them; absent is none (or
	// the server's default).
	ConsumerControls
}

// UpdateConsumerRequest changes a consumer's settings; absent fields stay,
// "" removes a filter or transform. With If-Match (the ETag a read
// answered) the change is made only over that version.
type UpdateConsumerRequest struct {
	Name       *string   `json:"name"`
	URL        *string   `json:"url"`
	EventTypes *[]string `json:"event_types"`
	Completion *bool     `json:"completion"`
	Enabled    *bool     `json:"enabled"`
	Filter     *string   `json:"filter"`
	Transform  *string   `json:"transform"`
	ConsumerControls
}

// ConsumerControls are a consumer's delivery controls, set on creation or
// changed by an update; an absent control stays as it is.
type ConsumerControls struct {
	// Paused holds deliveries (they spend no attempt); false resumes them
	// at the consumer's rate.
	Paused *bool `json:"paused,omitempty"`
	// RatePerSec caps calls per second across all processes; 0 removes the
	// cap.
	RatePerSec *float64 `json:"rate_per_sec,omitempty"`
	// MaxInFlight caps calls in flight across all processes (1: one at a
	// time); 0 or null removes the cap.
	MaxInFlight *int `json:"max_in_flight,omitempty"`
	// Ordering is "" (none), "subject" (per provider object) or a CEL
	// expression giving a key: for one key, an event is delivered only
	// after the earlier ones were handled, ignored, filtered or dead.
	Ordering *string `json:"ordering,omitempty"`
	// Retry is the consumer's own schedule.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// BreakerFailures consecutive failed calls open the circuit breaker
	// (0: the default, 10).
	BreakerFailures *int `json:"breaker_failures,omitempty"`
	// AutoDisableAfter of continuous failure disables the consumer (a
	// duration such as "72h"; "0s": the default, 72h).
	AutoDisableAfter *string `json:"auto_disable_after,omitempty"`
}

// RetryPolicy is a consumer's retry schedule: attempts before an event is
// dead for it (0: the server's, 6) and the first wait, growing fourfold
// ("" or "0s": the server's).
type RetryPolicy struct {
	Attempts *int    `json:"attempts,omitempty"`
	Base     *string `json:"base,omitempty"`
}

// Consumer is a consumer as the API shows it. SigningSecret is only set in
// the answer that created it: the server keeps it sealed and never shows it
// again.
type Consumer struct {
	ID         string   `json:"id"`
	OrgID      string   `json:"org_id"`
	Name       string   `json:"name"`
	App        string   `json:"app"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
	Completion bool     `json:"completion"`
	Enabled    bool     `json:"enabled"`
	// State is what its deliveries do now: enabled, failing (its last
	// call failed), paused, tripped (its circuit breaker is open) or
	// disabled.
	State     string    `json:"state"`
	Filter    string    `json:"filter"`
	Transform string    `json:"transform"`
	CreatedAt time.Time `json:"created_at"`
	// Delivery controls; see UpdateConsumerRequest.
	Paused           bool    `json:"paused"`
	RatePerSec       float64 `json:"rate_per_sec"`
	MaxInFlight      *int    `json:"max_in_flight"`
	Ordering         string  `json:"ordering"`
	RetryAttempts    int     `json:"retry_attempts"`
	RetryBase        string  `json:"retry_base,omitempty"`
	BreakerFailures  int     `json:"breaker_failures"`
	AutoDisableAfter string  `json:"auto_disable_after"`
	SigningSecret    string  `json:"signing_secret,omitempty"`
}

// ConsumerHealth is how deliveries to a consumer stand: its state
// (enabled, failing, paused, tripped by its circuit breaker, or disabled), the last
// hour's calls, the last call, and the routes waiting for it.
type ConsumerHealth struct {
	State          string     `json:"state"`
	Delivered1h    int        `json:"delivered_1h"`
	Failed1h       int        `json:"failed_1h"`
	P50Ms          float64    `json:"p50_ms"`
	P99Ms          float64    `json:"p99_ms"`
	LastStatus     int        `json:"last_status"`
	LastError      string     `json:"last_error"`
	LastDeliveryAt *time.Time `json:"last_delivery_at"`
	InFlight       int        `json:"in_flight"`
	Held           int        `json:"held"`
	Due            int        `json:"due"`
	OldestDueAt    *time.Time `json:"oldest_due_at"`
	// Retrying counts the routes waiting for a later attempt after a
	// failed call; NextAttemptAt is when the next call is due (null when
	// nothing waits, or the consumer is paused or disabled).
	Retrying      int        `json:"retrying"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// FilterErrors1h counts the events of the last hour the consumer's
	// filter failed on (each filtered, its record naming the error).
	FilterErrors1h int `json:"filter_errors_1h"`
	// ConsecutiveFailures counts the failed calls since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
}

// ConsumerTest is what a test delivery to a consumer came to: handled
// (the destination acknowledged: a 2xx, a PubAck, a publisher confirm, an
// acked produce, a stream entry), ignored, or retry with the error.
type ConsumerTest struct {
	EventID    string  `json:"event_id"`
	Outcome    string  `json:"outcome"`
	StatusCode int     `json:"status_code"`
	LatencyMs  float64 `json:"latency_ms"`
	Error      string  `json:"error"`
}

// CreateSubjectLinkRequest says that a provider object (in one connection)
// is a record of an app, so events about it go to that app's completion
// consumers.
type CreateSubjectLinkRequest struct {
	ConnectionID     string `json:"connection_id"`
	ProviderObjectID string `json:"provider_object_id"`
	App              string `json:"app"`
	RecordID         string `json:"record_id"`
}

// SubjectLink is a recorded link as the API shows it.
type SubjectLink struct {
	ID               string    `json:"id"`
	OrgID            string    `json:"org_id"`
	ConnectionID     string    `json:"connection_id"`
	ProviderObjectID string    `json:"provider_object_id"`
	App              string    `json:"app"`
	RecordID         string    `json:"record_id"`
	CreatedAt        time.Time `json:"created_at"`
}

// NotificationsRequest sets where an org's operational notifications go:
// every setting, as given ("" or [] for none).
type NotificationsRequest struct {
	URL             string   `json:"url"`
	SlackWebhookURL string   `json:"slack_webhook_url"`
	Topics          []string `json:"topics"`
}

// Notifications is an org's notification settings as the API shows them:
// the Slack URL masked; SigningSecret (the secret `url` deliveries are
// signed with) only in the answer to the first PUT.
type Notifications struct {
	URL             string   `json:"url"`
	SlackWebhookURL string   `json:"slack_webhook_url"`
	Topics          []string `json:"topics"`
	SigningSecret   string   `json:"signing_secret,omitempty"`
}

// EventType is an event type a connection has received, as the catalog
// counts it.
type EventType struct {
	Type           string    `json:"type"`
	ConnectionID   string    `json:"connection_id"`
	ConnectionName string    `json:"connection_name"`
	FirstSeenAt    time.Time `json:"first_seen_at"`
	LastSeenAt     time.Time `json:"last_seen_at"`
	// Count24h counts the events received in the current hour and the 23
	// before it; Total every event of the type.
	Count24h int64 `json:"count_24h"`
	Total    int64 `json:"total"`
}

// EventTypeDetail is an event type with what intake learnt of it: a
// json-schema.org draft 2020-12 document inferred from its events' data,
// the event that last changed it, its events per day, and the changes of
// shape its events showed, newest first.
type EventTypeDetail struct {
	EventType
	// Schema is null until an event's data has been learnt from.
	Schema  json.RawMessage   `json:"schema"`
	Example *EventTypeExample `json:"example"`
	Days    []EventTypeDay    `json:"days"`
	Changes []EventTypeChange `json:"changes"`
}

// EventTypeExample is the event that last changed a type's schema.
type EventTypeExample struct {
	EventID string          `json:"event_id"`
	Data    json.RawMessage `json:"data"`
}

// EventTypeDay counts a type's events received on one UTC day.
type EventTypeDay struct {
	Day   string `json:"day"` // 2026-11-30
	Count int64  `json:"count"`
}

// EventTypeChange is one drift of a type's shape: at path (JSONPath into
// the event's data), a field added, a field every earlier event had
// removed, or a type_changed; from and to are the JSON Schema types before
// and in the event that showed it.
type EventTypeChange struct {
	At             time.Time `json:"at"`
	Path           string    `json:"path"`
	Change         string    `json:"change"`
	From           []string  `json:"from,omitempty"`
	To             []string  `json:"to,omitempty"`
	ExampleEventID string    `json:"example_event_id"`
}

// Issue is one cause of trouble in one org as the API shows it (DESIGN
// §20): consumer_id for a delivery, rule or backlog issue, connection_id
// for a request issue; sample_event_id or sample_message_id alike.
type Issue struct {
	ID              string     `json:"id"`
	OrgID           string     `json:"org_id"`
	Kind            string     `json:"kind"`
	Status          string     `json:"status"`
	ConsumerID      string     `json:"consumer_id,omitempty"`
	ConnectionID    string     `json:"connection_id,omitempty"`
	SubjectName     string     `json:"subject_name"`
	Cause           string     `json:"cause"`
	Count           int64      `json:"count"`
	Events          int64      `json:"events"`
	FirstSeenAt     time.Time  `json:"first_seen_at"`
	LastSeenAt      time.Time  `json:"last_seen_at"`
	OpenedAt        time.Time  `json:"opened_at"`
	AcknowledgedAt  *time.Time `json:"acknowledged_at"`
	ResolvedAt      *time.Time `json:"resolved_at"`
	LastError       string     `json:"last_error"`
	SampleEventID   string     `json:"sample_event_id,omitempty"`
	SampleMessageID string     `json:"sample_message_id,omitempty"`
}

// IssueDetail is an issue with a page of the events (or messages) it
// touched, the last failed first; next_cursor pages on.
type IssueDetail struct {
	Issue
	Items      []IssueItem `json:"items"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// IssueItem is an event (or message) an issue touched, at its last
// failure.
type IssueItem struct {
	EventID   string    `json:"event_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	At        time.Time `json:"at"`
}

// UpdateIssueRequest moves an issue by hand: open, acknowledged or
// dismissed.
type UpdateIssueRequest struct {
	Status string `json:"status"`
}

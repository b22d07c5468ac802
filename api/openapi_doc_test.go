package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

// The OpenAPI document (api/openapi.json) is generated from the table below
// and the wire types in api/types.go: to describe a new route, add an
// operation here and run `go generate ./api`.

var update = flag.Bool("update", false, "rewrite api/openapi.json from the operations table")

const openAPIFile = "openapi.json"

// operation is one route of the admin API as the document describes it.
type operation struct {
	route   string // the pattern Server registers: "METHOD /path"
	id      string // operationId: a generated client's method name
	summary string
	public  bool // served without a token
	query   []*openapi3.Parameter
	header  []*openapi3.Parameter
	// request is a zero value of the JSON body's Go type (nil: no body);
	// requires names its members a request must carry.
	request  any
	requires []string
	// bodyOptional: the request may carry no body at all.
	bodyOptional bool
	status       int // the answer when it succeeds
	// response is a zero value of the answer's Go type; nil with content
	// set for an answer that is not JSON, nil alone for no body.
	response any
	content  map[string]*openapi3.MediaType
	// also are other answers it may give when it succeeds, by status.
	also map[int]any
}

// Error statuses, named for the document's shared responses.
var errorResponses = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusConflict:              "Conflict",
	http.StatusPreconditionFailed:    "PreconditionFailed",
	http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "Internal",
	http.StatusServiceUnavailable:    "Unavailable",
}

var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "The request is malformed or invalid (code `invalid`); the message names what to fix.",
	http.StatusUnauthorized:          "The bearer token is missing or not valid (code `unauthorized`).",
	http.StatusForbidden:             "The token may not do this: its role is below the one the action needs (viewer reads; operator also replays, re-routes, pauses and tests; admin also configures), an org's API key acting for another org, or an action only the staff token may take (code `forbidden`).",
	http.StatusNotFound:              "No such object in the caller's scope (code `not_found`).",
	http.StatusConflict:              "The object's state does not allow the action (code `conflict`).",
	http.StatusPreconditionFailed:    "The object changed since the version `If-Match` names (code `version_mismatch`): nothing was changed; read it again.",
	http.StatusRequestEntityTooLarge: "The request body exceeds 1 MiB (code `too_large`).",
	http.StatusTooManyRequests:       "The caller's org is at its budget for this kind of request: reads, consumer tests or bulk actions at once or a second (code `too_many_requests`); retry after `Retry-After` seconds.",
	http.StatusInternalServerError:   "An unexpected failure (code `internal`); the server logs it, the answer reveals nothing.",
	http.StatusServiceUnavailable:    "Storage cannot be reached, or a read ran past its deadline (code `unavailable`; the message says which); retry after `Retry-After` seconds.",
}

func operations() []operation {
	page := []*openapi3.Parameter{
		queryParam("limit", "Page size.", &openapi3.Schema{Type: &openapi3.Types{"integer"},
			Min: ptr(1.0), Max: ptr(float64(intake.MaxPageSize)), Default: intake.DefaultPageSize}),
		queryParam("cursor", "The `next_cursor` of the previous page.", uuidSchema()),
	}
	// The issue lists page on a time and an id.
	timedPage := []*openapi3.Parameter{page[0], queryParam("cursor", "The `next_cursor` of the previous page.", openapi3.NewStringSchema())}
	raw := map[string]*openapi3.MediaType{"*/*": {}}
	// A search, as the events and messages lists take it.
	search := func(match, q, since string) []*openapi3.Parameter {
		return []*openapi3.Parameter{
			queryParam("match", match, &openapi3.Schema{Type: &openapi3.Types{"string"}, MaxLength: ptr(uint64(intake.MaxMatchBytes))}),
			queryParam("q", q, openapi3.NewStringSchema()),
			queryParam("since", since+" at or after this time (RFC 3339).", timeSchema()),
			queryParam("until", since+" before this time (RFC 3339).", timeSchema()),
		}
	}
	return []operation{
		{route: "POST /api/v1/orgs", id: "createOrg", summary: "Create an org (staff); the answer carries its API key, shown once.",
			request: api.CreateOrgRequest{}, requires: []string{"name"}, status: 201, response: api.Org{}},
		{route: "GET /api/v1/orgs", id: "listOrgs", summary: "List the orgs the token sees.",
			status: 200, response: api.List[api.Org]{}},
		{route: "GET /api/v1/orgs/{id}", id: "getOrg", summary: "Show an org; its ETag is its version.",
			status: 200, response: api.Org{}},
		{header: ifMatchHeader, route: "PATCH /api/v1/orgs/{id}", id: "updateOrg", summary: "Rename an org (staff; a name another org has is 409) or set its own retention; \"\" or \"0s\" returns a retention to the server's default; absent fields stay.",
			request: api.UpdateOrgRequest{}, status: 200, response: api.Org{}},
		{route: "DELETE /api/v1/orgs/{id}", id: "deleteOrg", summary: "Delete an org (staff): its endpoints answer 404 at once, its keys stop, it leaves every list; its history stays. The answer is the org as it was.",
			status: 200, response: api.Org{}},
		{header: ifMatchHeader, route: "PUT /api/v1/orgs/{id}/notifications", id: "putNotifications", summary: "Set where the org's operational notifications go (every setting, as given); the first answer carries the signing secret of `url`, shown once. Its ETag is the settings' version.",
			request: api.NotificationsRequest{}, status: 200, response: api.Notifications{}},
		{route: "GET /api/v1/orgs/{id}/notifications", id: "getNotifications", summary: "Show where the org's operational notifications go; the Slack URL is masked; the ETag is the settings' version.",
			status: 200, response: api.Notifications{}},

		{route: "POST /api/v1/connections", id: "createConnection", summary: "Link an org to a provider account; secrets are never returned.",
			request: api.CreateConnectionRequest{}, requires: []string{"provider", "name"}, status: 201, response: api.Connection{}},
		{route: "GET /api/v1/connections", id: "listConnections", summary: "List connections.",
			status: 200, response: api.List[api.Connection]{}},
		{route: "GET /api/v1/connections/{id}", id: "getConnection", summary: "Show a connection.",
			status: 200, response: api.Connection{}},
		{header: ifMatchHeader, route: "PATCH /api/v1/connections/{id}", id: "updateConnection", summary: "Change a connection's name, provider config (config.script for hmac and none) or filter; absent fields stay.",
			request: api.UpdateConnectionRequest{}, status: 200, response: api.Connection{}},
		{route: "PUT /api/v1/connections/{id}/secrets", id: "replaceSecrets", summary: "Replace a connection's signing secrets; during a rotation give the old and the new together.",
			request: api.SecretsRequest{}, requires: []string{"secrets"}, status: 200, response: api.Connection{}},
		{route: "POST /api/v1/connections/{id}/adopt-handshake-secret", id: "adoptHandshakeSecret", summary: "Add the secret a provider handed over in a recorded handshake (Asana).",
			request: api.AdoptSecretRequest{}, requires: []string{"message_id"}, status: 200, response: api.Connection{}},
		{route: "DELETE /api/v1/connections/{id}", id: "deleteConnection", summary: "Delete a connection; its history stays.",
			status: 204},

		{route: "POST /api/v1/endpoints", id: "createEndpoint", summary: "Create an ingress address; the answer carries its token and URL, shown once.",
			request: api.CreateEndpointRequest{}, requires: []string{"connection_id"}, status: 201, response: api.Endpoint{}},
		{route: "GET /api/v1/endpoints", id: "listEndpoints", summary: "List endpoints.",
			status: 200, response: api.List[api.Endpoint]{}},
		{route: "GET /api/v1/endpoints/{id}", id: "getEndpoint", summary: "Show an endpoint.",
			status: 200, response: api.Endpoint{}},
		{header: ifMatchHeader, route: "PATCH /api/v1/endpoints/{id}", id: "updateEndpoint", summary: "Change the settings given and leave the others; `rate_per_sec: 0` means no limit.",
			request: api.UpdateEndpointRequest{}, status: 200, response: api.Endpoint{}},
		{route: "POST /api/v1/endpoints/{id}/rotate", id: "rotateEndpoint", summary: "A new token and URL, shown once (admin); the token replaced keeps working for overlap (24h when absent, 0s to 168h) and one an earlier rotation left working stops at once.",
			request: api.RotateEndpointRequest{}, status: 201, response: api.RotatedEndpoint{}},
		{route: "DELETE /api/v1/endpoints/{id}", id: "deleteEndpoint", summary: "Delete an endpoint: its address stops answering at once; its history stays.",
			status: 204},
		{route: "POST /api/v1/endpoints/{id}/replay", id: "replayWindow", summary: "Replay an endpoint's window of at most 7 days as new messages, in the background; with dry_run nothing is replayed and the answer (200) is the count and the first messages.",
			request: api.ReplayWindowRequest{}, requires: []string{"since", "until"}, status: 202, response: api.ReplayStarted{},
			also: map[int]any{200: api.Bulk[api.Message]{}}},
		{route: "DELETE /api/v1/endpoints/{id}/bodies", id: "eraseBodies", summary: "Erase the stored bodies an endpoint received in a time range; the messages stay.",
			query: []*openapi3.Parameter{
				requiredQuery(queryParam("since", "Start of the range (RFC 3339).", timeSchema())),
				requiredQuery(queryParam("until", "End of the range (RFC 3339).", timeSchema())),
			},
			status: 200, response: api.Count{}},

		{route: "GET /api/v1/messages", id: "listMessages", summary: "List received messages, newest first.",
			query: append([]*openapi3.Parameter{
				queryParam("endpoint_id", "Only messages received at this endpoint.", uuidSchema()),
				queryParam("state", "Only messages in this state.", enumSchema(intake.MessageStates)),
				queryParam("provider_event_id", "Only messages with this provider event id.", &openapi3.Schema{Type: &openapi3.Types{"string"}, MaxLength: ptr(uint64(500))}),
				queryParam("type", "Only messages with an event of this type.", &openapi3.Schema{Type: &openapi3.Types{"string"}, MaxLength: ptr(uint64(200))}),
			}, append(search("A JSON object one of the message's events' data must contain (with `type`: that event's), e.g. `{\"customer\":{\"id\":\"cus_1\"}}`.",
				"Words (at most 10) that must all occur in the message's raw body, in any case; a word also matches inside a longer one.",
				"Only messages received"), page...)...),
			status: 200, response: api.List[api.Message]{}},
		{route: "GET /api/v1/messages/{id}", id: "getMessage", summary: "Show a message with its attempts; credential headers and query parameters are never shown.",
			status: 200, response: api.MessageDetail{}},
		{route: "GET /api/v1/messages/{id}/body", id: "getMessageBody", summary: "The raw body as received, with its original Content-Type.",
			status: 200, content: raw},
		{route: "POST /api/v1/messages/{id}/body-url", id: "createBodyURL", summary: "A signed address that serves the raw body without a token for 5 minutes.",
			status: 200, response: api.BodyURL{}},
		{route: "POST /api/v1/messages/{id}/replay", id: "replayMessage", summary: "Replay a message as a new message (`replay_of` names the original).",
			status: 201, response: api.ReplayedMessage{}},
		{route: "POST /api/v1/messages/replay", id: "replayMessages", summary: "Replay every original message a search selects whose body is kept, each audited with the search; a search selecting none in particular is refused, and one selecting more than the server's bulk maximum (--bulk-max, default 10 000) is refused unless `confirm` is set, when it runs as a paced job (202, followed at GET /api/v1/replays/{id}). With dry_run nothing is replayed: the answer is the count and the first messages.",
			request: api.ReplayRequest{}, status: 200, response: api.Bulk[api.Message]{}, also: map[int]any{202: api.Replay{}}},

		{route: "GET /api/v1/events", id: "listEvents", summary: "List events, newest first.",
			query: append([]*openapi3.Parameter{
				queryParam("state", "Only events in this state.", enumSchema(intake.EventStates)),
				queryParam("type", "Only events of this type.", &openapi3.Schema{Type: &openapi3.Types{"string"}, MaxLength: ptr(uint64(200))}),
				queryParam("consumer_id", "Only events delivered to this consumer.", uuidSchema()),
			}, append(search("A JSON object the event's data must contain, e.g. `{\"customer\":{\"id\":\"cus_1\"}}`: objects match partially, an array holds the elements given, numbers match by value.",
				"Words (at most 10) that must all occur in the event's data, in any case; a word also matches inside a longer one.",
				"Only events created"), page...)...),
			status: 200, response: api.List[api.Event]{}},
		{route: "GET /api/v1/events/{id}", id: "getEvent", summary: "Show an event with every delivery attempt, oldest first.",
			status: 200, response: api.EventDetail{}},
		{route: "GET /api/v1/events/stream", id: "streamEvents", summary: "The scope's events as they commit, as Server-Sent Events: an `id:` line (the event id) and a `data:` line holding the envelope a consumer receives. Resume with Last-Event-ID (or `after`); delivery is at least once.",
			query: []*openapi3.Parameter{
				queryParam("endpoint_id", "Only events of messages received at this endpoint.", uuidSchema()),
				queryParam("after", "Resume after this event id (Last-Event-ID wins).", uuidSchema()),
			},
			header: []*openapi3.Parameter{{In: openapi3.ParameterInHeader, Name: "Last-Event-ID",
				Description: "Resume after this event id.", Schema: uuidSchema().NewRef()}},
			status: 200, content: map[string]*openapi3.MediaType{"text/event-stream": {Schema: openapi3.NewStringSchema().NewRef()}}},
		{route: "POST /api/v1/events/{id}/reroute", id: "rerouteEvent", summary: "Take a dead or no_consumer event back to pending.",
			status: 200, response: api.Rerouted{}},
		{route: "POST /api/v1/events/{id}/retry", id: "retryEvent", summary: "Retry now (operator): the event's routes waiting for a later attempt, or held, become due now, spending no attempt and restoring none; a call being made is left alone, and a tripped consumer gets its one probe now. Answers how many events were made due (0 when nothing waits); a dead, no_consumer or filtered event is 409: re-route it. With `dry_run` nothing changes and `items` lists the event.",
			request: api.RetryRequest{}, bodyOptional: true, status: 200, response: api.Retried{}},
		{route: "POST /api/v1/events/reroute", id: "rerouteEvents", summary: "Re-route every re-routable (dead, no_consumer or filtered) event a search selects; each is audited with the search. A search selecting more than the server's bulk maximum (--bulk-max, default 10 000) is refused unless `confirm` is set, when it runs as a paced job (202, followed at GET /api/v1/replays/{id}). With dry_run nothing is re-routed: the answer is the count and the first events.",
			request: api.RerouteRequest{}, status: 200, response: api.Bulk[api.Event]{}, also: map[int]any{202: api.Replay{}}},
		{route: "GET /api/v1/event-types", id: "listEventTypes", summary: "The event types the caller's connections have received, with their counts (the catalog).",
			query:  []*openapi3.Parameter{queryParam("connection_id", "Only this connection's types.", uuidSchema())},
			status: 200, response: api.List[api.EventType]{}},
		{route: "GET /api/v1/event-types/{type}", id: "getEventType", summary: "An event type with the JSON Schema inferred from its events, an example, its days and its changes of shape.",
			query:  []*openapi3.Parameter{queryParam("connection_id", "The connection that received it; needed when several did.", uuidSchema())},
			status: 200, response: api.EventTypeDetail{}},
		{route: "GET /api/v1/asyncapi.json", id: "getAsyncAPIDocument", summary: "The event types as an AsyncAPI 3.0 document: a channel, a message and a receive operation per type, the message the envelope consumers receive (its `data` the type's inferred schema) with the signature headers. An org's caller gets its org's types; staff names `org_id` or `connection_id`.",
			query: []*openapi3.Parameter{
				queryParam("connection_id", "Only this connection's types.", uuidSchema()),
				queryParam("org_id", "This org's types (staff; an org's key sees its own).", uuidSchema()),
			},
			status: 200, response: map[string]any{}},
		{route: "GET /api/v1/unclaimed", id: "listUnclaimed", summary: "Events no consumer wanted, across every org (staff).",
			query: page, status: 200, response: api.List[api.Event]{}},

		{route: "POST /api/v1/consumers", id: "createConsumer", summary: "Register an application to receive events; the answer carries its signing secret, shown once.",
			request: api.CreateConsumerRequest{}, requires: []string{"name", "app", "url", "event_types"}, status: 201, response: api.Consumer{}},
		{route: "GET /api/v1/consumers", id: "listConsumers", summary: "List consumers.",
			status: 200, response: api.List[api.Consumer]{}},
		{route: "GET /api/v1/consumers/{id}", id: "getConsumer", summary: "Show a consumer.",
			status: 200, response: api.Consumer{}},
		{header: ifMatchHeader, route: "PATCH /api/v1/consumers/{id}", id: "updateConsumer", summary: "Change the settings given and leave the others; \"\" removes a filter or transform, null removes max_in_flight. A rule change is audited with its old and new source.",
			request: api.UpdateConsumerRequest{}, status: 200, response: api.Consumer{}},
		{route: "POST /api/v1/consumers/{id}/rotate-secret", id: "rotateConsumerSecret", summary: "A new signing secret, shown once; the old one keeps signing beside it for keep_old_for (24h when absent).",
			request: api.RotateSecretRequest{}, status: 201, response: api.RotatedSecret{}},
		{route: "POST /api/v1/consumers/{id}/pause", id: "pauseConsumer", summary: "Hold the consumer's deliveries: they wait, spend no attempt and never make an event dead.",
			status: 200, response: api.Consumer{}},
		{route: "POST /api/v1/consumers/{id}/resume", id: "resumeConsumer", summary: "Let a paused consumer's held deliveries go, at its rate.",
			status: 200, response: api.Consumer{}},
		{route: "POST /api/v1/consumers/{id}/retry", id: "retryConsumer", summary: "Retry now (operator): every event waiting for this consumer, at most 10 000 (the earliest due first), becomes due now, spending no attempt; calls being made are left alone, and a tripped consumer gets its one probe now. Answers how many events were made due; with `dry_run` nothing changes and `items` lists the first 20.",
			request: api.RetryRequest{}, bodyOptional: true, status: 200, response: api.Retried{}},
		{route: "GET /api/v1/consumers/{id}/stats", id: "consumerStats", summary: "The consumer's calls per hour over 24 hours (`window=24h`, the default) or per day over 7 days (`window=7d`), each ending with the current hour or day (UTC): delivered, failed, and the p50 and p99 latency of all calls.",
			query:  []*openapi3.Parameter{queryParam("window", "24h (hourly buckets) or 7d (daily buckets).", &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: []any{"24h", "7d"}, Default: "24h"})},
			status: 200, response: api.ConsumerStats{}},
		{route: "GET /api/v1/consumers/{id}/health", id: "consumerHealth", summary: "How deliveries to the consumer stand: state, the last hour's calls, the last call, and what waits for it.",
			status: 200, response: api.ConsumerHealth{}},
		{route: "POST /api/v1/consumers/{id}/test", id: "testConsumer", summary: "Deliver a test event (intake.test) to the consumer, whatever its kind, signed as its events are and without its rules, and answer what the destination said.",
			status: 200, response: api.ConsumerTest{}},
		{route: "DELETE /api/v1/consumers/{id}", id: "deleteConsumer", summary: "Delete a consumer; its history stays.",
			status: 204},

		{route: "POST /api/v1/rules/test", id: "testRule", summary: "Run a filter, transform or interpret script once against a stored event, a stored message (interpret) or an event given inline; nothing is written.",
			request: api.RuleTestRequest{}, requires: []string{"kind", "source"}, status: 200, response: api.RuleTestResult{}},
		{route: "POST /api/v1/subject-links", id: "createSubjectLink", summary: "Record that a provider object is a record of an app, so events about it go to that app's completion consumers.",
			request: api.CreateSubjectLinkRequest{}, requires: []string{"connection_id", "provider_object_id", "app", "record_id"},
			status: 201, response: api.SubjectLink{}},
		{route: "GET /api/v1/replays/{id}", id: "getReplay", summary: "A window replay's or bulk job's progress: its kind, how many rows it selected (total) and has taken (done), and its state (running, done or failed, with the error).",
			status: 200, response: api.Replay{}},
		{route: "GET /api/v1/issues", id: "listIssues", summary: "The issues: failures that share one cause, by consumer or connection, the last seen first. `?status=open` leaves out acknowledged ones.",
			query: append([]*openapi3.Parameter{
				queryParam("status", "Only issues of this status.", enumSchema(intake.IssueStatuses)),
				queryParam("kind", "Only issues of this kind.", enumSchema(intake.IssueKinds)),
				queryParam("consumer_id", "Only this consumer's issues.", uuidSchema()),
				queryParam("connection_id", "Only this connection's issues.", uuidSchema()),
			}, timedPage...), status: 200, response: api.List[api.Issue]{}},
		{route: "GET /api/v1/issues/{id}", id: "getIssue", summary: "An issue with its events (or messages, for a request issue), the last failed first, paged by `cursor`.",
			query: timedPage, status: 200, response: api.IssueDetail{}},
		{route: "PATCH /api/v1/issues/{id}", id: "updateIssue", summary: "Acknowledge an issue, open it again or dismiss it (operator); only the issue itself resolves, when its consumer or connection succeeds again.",
			request: api.UpdateIssueRequest{}, requires: []string{"status"}, status: 200, response: api.Issue{}},
		{route: "POST /api/v1/issues/{id}/retry", id: "retryIssue", summary: "Retry now (operator): every event of a delivery or rule issue still waiting for its consumer (a backlog issue: the consumer's whole backlog), at most 10 000, becomes due now, spending no attempt. A request issue is 409: its messages are replayed, not retried. Answers how many events were made due; with `dry_run` nothing changes and `items` lists the first 20.",
			request: api.RetryRequest{}, bodyOptional: true, status: 200, response: api.Retried{}},
		{route: "GET /api/v1/audit", id: "listAudit", summary: "The audit log of operator actions, newest first.",
			query: page, status: 200, response: api.List[api.AuditEntry]{}},

		{route: "POST /api/v1/keys", id: "createKey", summary: "Create another API key of an org, with a role: viewer, operator or admin (the default); the answer carries the key, shown once. Admin only.",
			request: api.CreateKeyRequest{}, status: 201, response: api.APIKey{}},
		{route: "GET /api/v1/keys", id: "listKeys", summary: "List API keys: their prefixes and roles, never the keys. Admin only.",
			status: 200, response: api.List[api.APIKey]{}},
		{route: "DELETE /api/v1/keys/{id}", id: "revokeKey", summary: "Revoke a key at once.",
			status: 204},

		{route: "POST /api/v1/apply", id: "applyDocument", summary: "Make the store hold what a configuration document declares (`intake apply`), matched by name within each org; the whole document is checked before anything is written. The plan lists every change; what the server mints on creation is in it once.",
			query: []*openapi3.Parameter{
				queryParam("dry_run", "Plan only; write nothing.", openapi3.NewBoolSchema()),
				queryParam("prune", "Also delete the connections, endpoints and consumers of the document's orgs that it does not name.", openapi3.NewBoolSchema()),
			},
			request: control.Document{}, requires: []string{"orgs"}, status: 200, response: control.Plan{}},
		{route: "GET /api/v1/export", id: "exportDocument", summary: "The current state as a configuration document (`intake export`), secrets as ${env:…} placeholders.",
			query:  []*openapi3.Parameter{queryParam("org_id", "Only this org (staff; an org's key sees its own).", uuidSchema())},
			status: 200, response: control.Document{}},

		{route: "GET /body/{signed}", id: "getSignedBody", public: true, summary: "The raw body a signed address (from createBodyURL) names, until it expires. Every refusal is the same bare 404.",
			status: 200, content: raw},
		{route: "GET /api/v1/openapi.json", id: "getOpenAPIDocument", public: true, summary: "This document.",
			status: 200, response: map[string]any{}},
	}
}

// The document's shapes for routes' parameters.

// ifMatchHeader makes a change over the version a read answered as its
// ETag: an object changed since is not changed (412).
var ifMatchHeader = []*openapi3.Parameter{{In: openapi3.ParameterInHeader, Name: "If-Match",
	Description: "The ETag a read of the object answered (\"3\"): the change is made only over that version, else 412 and nothing changes. " +
		"Without it the change is made over whatever is there, and two racing changes of different fields both stick.",
	Schema: openapi3.NewStringSchema().NewRef()}}

func queryParam(name, desc string, s *openapi3.Schema) *openapi3.Parameter {
	return &openapi3.Parameter{In: openapi3.ParameterInQuery, Name: name, Description: desc, Schema: s.NewRef()}
}

func requiredQuery(p *openapi3.Parameter) *openapi3.Parameter {
	p.Required = true
	return p
}

func uuidSchema() *openapi3.Schema {
	return &openapi3.Schema{Type: &openapi3.Types{"string"}, Format: "uuid"}
}
func timeSchema() *openapi3.Schema {
	return &openapi3.Schema{Type: &openapi3.Types{"string"}, Format: "date-time"}
}

func enumSchema[S ~string](values []S) *openapi3.Schema {
	s := openapi3.NewStringSchema()
	for _, v := range names(values) {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// buildOpenAPIDocument makes the document from operations() and the Go
// types they name.
func buildOpenAPIDocument(t *testing.T) []byte {
	t.Helper()
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{
			Title:   "intake admin API",
			Version: "v1",
			Description: "The admin API of intake, a self-hosted inbound webhook gateway. JSON under /api/v1; " +
				"`Authorization: Bearer <token>`: the staff token sees every org, an org's API key sees only its org. " +
				"Times are RFC 3339 in UTC. Every failed request answers `{\"error\":{\"code\",\"message\"}}`.",
		},
		Servers:  openapi3.Servers{{URL: "/", Description: "the intake server (`--addr`, `INTAKE_URL`)"}},
		Security: openapi3.SecurityRequirements{{"bearer": {}}},
		Paths:    openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:   openapi3.Schemas{},
			Responses: openapi3.ResponseBodies{},
			SecuritySchemes: openapi3.SecuritySchemes{"bearer": {Value: &openapi3.SecurityScheme{
				Type: "http", Scheme: "bearer",
				Description: "The staff token (`INTAKE_ADMIN_TOKEN`) or an org's API key.",
			}}},
		},
	}
	docs, err := goDocs()
	if err != nil {
		t.Fatal(err)
	}
	wire := &wireSchemas{docs: docs, enumsUsed: map[string]bool{}}
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{
			ExportComponentSchemas: true, ExportTopLevelSchema: true, ExportGenerics: true}),
		openapi3gen.CreateTypeNameGenerator(schemaName),
		openapi3gen.SchemaCustomizer(func(_ string, t reflect.Type, _ reflect.StructTag, s *openapi3.Schema) error {
			return wire.customize(t, s)
		}),
	)
	schema := func(v any) *openapi3.SchemaRef {
		ref, err := gen.NewSchemaRefForValue(v, doc.Components.Schemas)
		if err != nil {
			t.Fatalf("schema of %T: %v", v, err)
		}
		return ref
	}

	errBody := schema(api.ErrorBody{})
	for status, name := range errorResponses {
		r := &openapi3.Response{Description: &[]string{errorDescriptions[status]}[0],
			Content: openapi3.NewContentWithJSONSchemaRef(errBody)}
		switch status {
		case http.StatusUnauthorized:
			r.Headers = openapi3.Headers{"WWW-Authenticate": {Value: &openapi3.Header{Parameter: openapi3.Parameter{
				Schema: openapi3.NewStringSchema().NewRef(), Required: true}}}}
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			r.Headers = openapi3.Headers{"Retry-After": {Value: &openapi3.Header{Parameter: openapi3.Parameter{
				Description: "Seconds to wait before retrying.", Schema: openapi3.NewIntegerSchema().NewRef(), Required: true}}}}
		}
		doc.Components.Responses[name] = &openapi3.ResponseRef{Value: r}
	}

	for _, op := range operations() {
		method, path, _ := strings.Cut(op.route, " ")
		o := &openapi3.Operation{OperationID: op.id, Summary: op.summary, Responses: openapi3.NewResponses()}
		for _, name := range pathParams(path) {
			s := uuidSchema()
			if name != "id" {
				s = openapi3.NewStringSchema()
			}
			o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Value: openapi3.NewPathParameter(name).WithSchema(s)})
		}
		for _, p := range append(append([]*openapi3.Parameter(nil), op.query...), op.header...) {
			o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Value: p})
		}
		if op.request != nil {
			ref := schema(op.request)
			s := doc.Components.Schemas[strings.TrimPrefix(ref.Ref, "#/components/schemas/")]
			if s == nil {
				t.Fatalf("%s: the request type %T has no component schema", op.route, op.request)
			}
			// The server refuses unknown members, and requires these.
			s.Value.Required = op.requires
			s.Value.AdditionalProperties = openapi3.AdditionalProperties{Has: ptr(false)}
			// A null list decodes as an empty one.
			for _, p := range s.Value.Properties {
				if p.Value != nil && p.Value.Type.Is("array") {
					*p.Value.Type = append(*p.Value.Type, "null")
				}
			}
			o.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(!op.bodyOptional).
				WithJSONSchemaRef(ref)}
		}
		ok := &openapi3.Response{Description: ptr(http.StatusText(op.status))}
		switch {
		case op.response != nil:
			ok.Content = openapi3.NewContentWithJSONSchemaRef(schema(op.response))
		case op.content != nil:
			ok.Content = op.content
		}
		o.Responses.Set(strconv.Itoa(op.status), &openapi3.ResponseRef{Value: ok})
		for status, response := range op.also {
			o.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Value: &openapi3.Response{Description: ptr(http.StatusText(status)),
				Content: openapi3.NewContentWithJSONSchemaRef(schema(response))}})
		}
		if op.public {
			o.Security = &openapi3.SecurityRequirements{}
		} else {
			// Every authenticated route answers its errors through one
			// mapping of error codes to statuses, whichever layer failed.
			for status, name := range errorResponses {
				o.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + name})
			}
		}
		if op.route == "GET /body/{signed}" {
			o.Responses.Set("404", &openapi3.ResponseRef{Value: &openapi3.Response{Description: ptr("No such address, or it expired."),
				Content: openapi3.NewContentWithSchema(openapi3.NewStringSchema(), []string{"text/plain"})}})
		}
		item := doc.Paths.Value(path)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(path, item)
		}
		if item.GetOperation(method) != nil {
			t.Fatalf("%s is in the operations table twice", op.route)
		}
		item.SetOperation(method, o)
	}

	for key := range enums {
		if !wire.enumsUsed[key] {
			t.Errorf("enums names %s, which no wire type has", key)
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

var pathParamRE = regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)

func pathParams(path string) []string {
	var names []string
	for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
		names = append(names, m[1])
	}
	return names
}

// schemaName names a wire type's component: List[api.Org] is OrgList.
func schemaName(t reflect.Type) string {
	name := t.Name()
	if generic, arg, ok := strings.Cut(name, "["); ok {
		arg = strings.TrimSuffix(arg, "]")
		name = arg[strings.LastIndex(arg, ".")+1:] + generic
	}
	return name
}

var timeType = reflect.TypeFor[time.Time]()

// enums lists the values of wire members that are plain strings in Go,
// keyed by "Type.member".
var enums = func() map[string][]string {
	messageStates, eventStates := names(intake.MessageStates), names(intake.EventStates)
	return map[string][]string{
		"Message.state":                  messageStates,
		"MessageDetail.state":            messageStates,
		"Attempt.state":                  messageStates,
		"ReplayedMessage.state":          messageStates,
		"Rerouted.state":                 eventStates,
		"Event.state":                    eventStates,
		"EventDetail.state":              eventStates,
		"EventRoute.state":               names(intake.RouteStates),
		"Delivery.outcome":               intake.DeliveryOutcomes,
		"DeliveryResponse.body_encoding": {"text", "base64"},
		"Change.action":                  {control.ActionCreate, control.ActionUpdate, control.ActionDelete, control.ActionUnchanged},
		"Change.kind":                    {"org", "connection", "endpoint", "consumer"},
		"APIKey.role":                    names(intake.Roles),
		"CreateKeyRequest.role":          names(intake.Roles),
		"Issue.kind":                     names(intake.IssueKinds),
		"Issue.status":                   names(intake.IssueStatuses),
		"UpdateIssueRequest.status":      {string(intake.IssueOpen), string(intake.IssueAcknowledged), string(intake.IssueDismissed)},
		// Every code an answer carries; others (stale) are internal.
		"ErrorDetail.code": {intake.EINVALID, intake.EUNAUTHORIZED, intake.EFORBIDDEN, intake.ENOTFOUND,
			intake.ECONFLICT, intake.EVERSION, intake.ETOOLARGE, intake.EBUSY, intake.EINTERNAL, intake.EUNAVAILABLE},
	}
}()

func names[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// wireSchemas completes the schemas openapi3gen makes of the wire types.
type wireSchemas struct {
	docs      map[string]string // "Type" and "Type.Field" to their doc comments
	enumsUsed map[string]bool
}

// customize states what encoding/json does with a struct (a member without
// omitempty is always written, so it is required; a pointer may be null),
// gives the members enums names their values, and carries the Go doc
// comments over as descriptions.
func (w *wireSchemas) customize(t reflect.Type, s *openapi3.Schema) error {
	if t.Kind() != reflect.Struct || t == timeType {
		return nil
	}
	s.Description = w.docs[goTypeName(t)]
	s.Required = nil
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		prop := s.Properties[name]
		if prop == nil {
			return fmt.Errorf("%s.%s has no schema", t.Name(), f.Name)
		}
		if !strings.Contains(","+opts+",", ",omitempty,") {
			s.Required = append(s.Required, name)
		}
		if values, ok := enums[t.Name()+"."+name]; ok {
			w.enumsUsed[t.Name()+"."+name] = true
			for _, v := range values {
				prop.Value.Enum = append(prop.Value.Enum, v)
			}
		}
		if f.Type.Kind() == reflect.Pointer {
			if strings.HasPrefix(prop.Ref, "#/components/schemas/") {
				prop = &openapi3.SchemaRef{Value: &openapi3.Schema{
					AnyOf: openapi3.SchemaRefs{{Ref: prop.Ref}, {Value: &openapi3.Schema{Type: &openapi3.Types{"null"}}}}}}
				s.Properties[name] = prop
			} else if prop.Value.Type != nil && !prop.Value.Type.Includes("null") {
				prop.Value.Nullable = false
				*prop.Value.Type = append(*prop.Value.Type, "null")
			}
		}
		if !strings.HasPrefix(prop.Ref, "#/") {
			owner := t
			if len(f.Index) > 1 {
				owner = t.FieldByIndex(f.Index[:len(f.Index)-1]).Type
			}
			prop.Value.Description = w.docs[goTypeName(owner)+"."+f.Name]
		}
	}
	return nil
}

// goTypeName is a type's name in its declaration: List, not List[api.Org].
func goTypeName(t reflect.Type) string {
	if t.PkgPath() != reflect.TypeFor[api.Org]().PkgPath() {
		return ""
	}
	name, _, _ := strings.Cut(t.Name(), "[")
	return name
}

// goDocs reads the doc comments of the api package's types and their
// fields, so the document says what the code says.
func goDocs() (map[string]string, error) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/intakehq/intake/api")
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	for _, typ := range pkg.Types {
		// Comments name fields as Go does; the document names them as
		// JSON does.
		words := []string{`\bnil\b`, "null"}
		fieldDocs := map[string]string{}
		for _, spec := range typ.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				text := field.Doc.Text()
				if text == "" {
					text = field.Comment.Text()
				}
				var tag string
				if field.Tag != nil {
					tag, _ = strconv.Unquote(field.Tag.Value)
				}
				json, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				for _, n := range field.Names {
					fieldDocs[n.Name] = text
					if json != "" && json != "-" {
						words = append(words, `\b`+n.Name+`\b`, "`"+json+"`")
					}
				}
			}
		}
		jsonNames := func(text string) string {
			text = strings.Join(strings.Fields(text), " ")
			for i := 0; i < len(words); i += 2 {
				text = regexp.MustCompile(words[i]).ReplaceAllLiteralString(text, words[i+1])
			}
			return text
		}
		docs[typ.Name] = jsonNames(typ.Doc)
		for name, text := range fieldDocs {
			docs[typ.Name+"."+name] = jsonNames(text)
		}
	}
	return docs, nil
}

// TestOpenAPIDocumentIsCurrent fails when api/openapi.json differs from
// what the operations table and the wire types make of it.
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	want := buildOpenAPIDocument(t)
	if *update {
		if err := os.WriteFile(openAPIFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("api/%s is stale (first difference at line %d): run `go generate ./api` and commit it",
			openAPIFile, firstDifferentLine(got, want))
	}
}

func firstDifferentLine(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

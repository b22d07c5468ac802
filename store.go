package intake

import (
	"context"
	"net/http"
	"time"
)

// Store is everything intake keeps: the union of the narrow interfaces
// below, one per kind of work. Each backend (store/sqlite, store/postgres)
// implements it and passes the one conformance suite in store/storetest; a
// component asks only for the interface it uses. Methods that read
// org-owned rows take a Scope so an org's API key can never reach another
// org's rows. Every operator write takes the audit entries to record in the
// same transaction (package control passes them).
type Store interface {
	Tenancy
	Ingester
	MessageQueue
	EventQueue
	Health
	History
	Retention
	BlobRefs
	ReplayJobs
	Audit
	MasterKeys
	Sessions
	Notifications
	EventTypes
	Issues
	// Stats counts messages and events by state and finds the oldest due
	// work, for gauges and alarms.
	Stats(ctx context.Context, now time.Time) (Stats, error)
	// Ping reports whether the store can serve.
	Ping(ctx context.Context) error
	Close() error
}

// Tenancy keeps the rows an operator configures: orgs and their API keys,
// connections, endpoints, consumers and subject links.
type Tenancy interface {
	// CreateOrg inserts an org with its first API key; a name another live
	// org has is ECONFLICT.
	CreateOrg(ctx context.Context, o Org, key APIKey, audit ...AuditEntry) error
	// OrgByKeyHash finds the live org of an unrevoked API key, and the
	// key's role in it.
	OrgByKeyHash(ctx context.Context, apiKeyHash []byte) (Org, Role, error)
	CreateAPIKey(ctx context.Context, sc Scope, k APIKey, audit ...AuditEntry) error
	ListAPIKeys(ctx context.Context, sc Scope) ([]APIKey, error)
	// RevokeAPIKey stops a key at once.
	RevokeAPIKey(ctx context.Context, sc Scope, id string, at time.Time, audit ...AuditEntry) error
	// ListOrgs lists the live orgs visible in sc.
	ListOrgs(ctx context.Context, sc Scope) ([]Org, error)
	// UpdateOrg saves an org's name and retention overrides (zero: the
	// server's default), written only over o.Version (EVERSION otherwise).
	// A name another live org has is ECONFLICT.
	UpdateOrg(ctx context.Context, sc Scope, o Org, audit ...AuditEntry) error

	CreateConnection(ctx context.Context, c Connection, audit ...AuditEntry) error
	Connection(ctx context.Context, sc Scope, id string) (Connection, error)
	ListConnections(ctx context.Context, sc Scope) ([]Connection, error)
	// ReplaceConnectionSecrets stores a connection's new sealed secret list
	// (the old and new secrets together during a rotation).
	ReplaceConnectionSecrets(ctx context.Context, sc Scope, id string, sealed []byte, audit ...AuditEntry) error
	// UpdateConnection saves a connection's name, config and filter.
	UpdateConnection(ctx context.Context, sc Scope, c Connection, audit ...AuditEntry) error

	CreateEndpoint(ctx context.Context, e Endpoint, audit ...AuditEntry) error
	Endpoint(ctx context.Context, sc Scope, id string) (Endpoint, error)
	// EndpointByTokenHash finds an endpoint for ingress, enabled or not, by
	// its token or the one its last rotation replaced, expired or not:
	// the caller asks Endpoint.AddressedBy.
	EndpointByTokenHash(ctx context.Context, tokenHash []byte) (Endpoint, error)
	UpdateEndpoint(ctx context.Context, sc Scope, e Endpoint, audit ...AuditEntry) error
	// RotateEndpointToken saves the token hashes RotateToken decided, over
	// the endpoint's version (compare-and-set).
	RotateEndpointToken(ctx context.Context, sc Scope, e Endpoint, audit ...AuditEntry) error
	// Delete marks a connection, endpoint or consumer deleted (seed 003's
	// soft delete): every read ignores it from then on, its history stays.
	// Deleting a connection deletes its endpoints; deleting an org deletes
	// its connections, endpoints and consumers.
	Delete(ctx context.Context, sc Scope, kind DeleteKind, id string, at time.Time, audit ...AuditEntry) error
	ListEndpoints(ctx context.Context, sc Scope) ([]Endpoint, error)

	CreateConsumer(ctx context.Context, c Consumer, audit ...AuditEntry) error
	Consumer(ctx context.Context, sc Scope, id string) (Consumer, error)
	ListConsumers(ctx context.Context, sc Scope) ([]Consumer, error)
	// UpdateConsumer saves a consumer's settings: everything but its id,
	// org, secret and creation time.
	UpdateConsumer(ctx context.Context, sc Scope, c Consumer, audit ...AuditEntry) error
	// RotateConsumerSecret replaces a consumer's sealed signing secret,
	// keeping the old one beside it until oldUntil (zero: not at all).
	RotateConsumerSecret(ctx context.Context, sc Scope, id string, sealedNew, sealedOld []byte, oldUntil time.Time, audit ...AuditEntry) error

	// PutSubjectLink records (connection, provider object id) → (app,
	// record); a later link for the same object replaces the earlier.
	PutSubjectLink(ctx context.Context, sc Scope, l SubjectLink, audit ...AuditEntry) error
}

// Ingester takes requests in at the edge: it finds the endpoint a token
// addresses, opens the connection for handshakes answered inline, and
// commits what arrives.
type Ingester interface {
	// EndpointByTokenHash finds an endpoint for ingress, enabled or not, by
	// its token or the one its last rotation replaced, expired or not:
	// the caller asks Endpoint.AddressedBy.
	EndpointByTokenHash(ctx context.Context, tokenHash []byte) (Endpoint, error)
	Connection(ctx context.Context, sc Scope, id string) (Connection, error)
	// Ingest durably commits a received message (see CheckIngest: queued,
	// or handed over under its first lease), sharing the commit with
	// concurrent callers; it returns only once the commit holding m is on
	// disk, and wakes the workers when m is queued.
	Ingest(ctx context.Context, m *Message) error
	// StorageBytes is how much space the store's data takes, for the
	// storage quota: cheap to ask, approximate by design.
	StorageBytes(ctx context.Context) (int64, error)
	// InsertNotice records a notice (the storage quota refusing).
	InsertNotice(ctx context.Context, n Notice) error
	ChangeFeed
}

// MessageQueue is the worker's view: messages are the work items.
type MessageQueue interface {
	// ClaimMessages takes up to limit due messages (queued or failed and due,
	// or processing with an expired lease) as their next numbered attempt,
	// leased until now+lease, none of the orgs in skip: the worker skips
	// the orgs whose work already waits for it, so one org's backlog is
	// not claimed in front of another org's messages.
	ClaimMessages(ctx context.Context, now time.Time, lease time.Duration, limit int, skip ...string) ([]Claim, error)
	// SettleMessage applies a processing result in one transaction (see
	// DecideSettlements). It fails with ESTALE if the attempt is not current.
	SettleMessage(ctx context.Context, now time.Time, s Settlement) (Settled, error)
	// ReleaseMessage ends a held lease so another worker can take the
	// message once after has passed from now. The released attempt was
	// never made: the next claim takes the same attempt number, so a
	// release spends none of the message's attempts.
	ReleaseMessage(ctx context.Context, now time.Time, after time.Duration, id string, attempt int) error
	// MessageBody returns a message's stored request; the worker reads a
	// body a claim deferred (Message.DeferredBody) with it.
	MessageBody(ctx context.Context, sc Scope, id string) (StoredBody, error)
	// Connection returns a connection (its sealed secrets and config).
	Connection(ctx context.Context, sc Scope, id string) (Connection, error)
	// Endpoint returns an endpoint (its sealed token, for providers that
	// sign the URL they post to).
	Endpoint(ctx context.Context, sc Scope, id string) (Endpoint, error)
	Listener
	ChangeFeed
}

// EventQueue is the router's view: events are fanned out to routes, and
// routes are the work items.
type EventQueue interface {
	// ClaimEvents takes up to limit due events that are not yet fanned out
	// (pending or retrying, due, not leased), leased until now+lease, with
	// the consumers already done with each (a re-routed event's handled
	// or ignored routes). An event whose previous lease expired unsettled
	// is taken as retrying.
	ClaimEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]EventClaim, error)
	ListConsumers(ctx context.Context, sc Scope) ([]Consumer, error)
	// MessageRequests returns, for each of the messages that exists, the
	// raw query and the headers of its request, for the rules that read
	// them; the headers are nil once a message's body has expired.
	MessageRequests(ctx context.Context, messageIDs []string) (map[string]OriginalRequest, error)
	// Connection returns a connection, for the header names its config
	// makes credentials.
	Connection(ctx context.Context, sc Scope, id string) (Connection, error)
	Listener
	ChangeFeed
	RouteQueue
}

// Listener wakes a loop when work it waits for commits.
type Listener interface {
	// Listen returns a channel that receives (coalesced) when work of the
	// topic commits, and a function that stops listening.
	Listen(topic string) (<-chan struct{}, func())
}

// ChangeFeed lets a component's caches see an operator's change at once.
type ChangeFeed interface {
	// Changes is the store's count of operator changes: every write
	// that disables, deletes, rotates or revokes moves it before it
	// returns, and a change committed by another process on the same
	// database moves it within a second.
	Changes() Versioned
}

// Versioned is a count that only grows: a cache tags what it loads with
// the version it saw before loading, and uses an entry only while the
// version is unchanged.
type Versioned interface {
	Version() uint64
}

// History is what an operator reads and acts on after the fact: messages,
// events, their attempts and deliveries.
type History interface {
	Message(ctx context.Context, sc Scope, id string) (Message, error)
	// MessageBody returns the stored request: its headers, and its body or
	// the key of the body's object; ENOTFOUND once the body expired.
	MessageBody(ctx context.Context, sc Scope, id string) (StoredBody, error)
	ListMessages(ctx context.Context, sc Scope, f MessageFilter) (Page[Message], error)
	// MessageAttempts lists a message's settled attempts, oldest first.
	MessageAttempts(ctx context.Context, sc Scope, id string) ([]Attempt, error)
	// CountMessages counts what ListMessages would list over all pages.
	CountMessages(ctx context.Context, sc Scope, f MessageFilter) (int, error)
	// Overview counts, in one pass over q's window, the originals received
	// in each hour by state now, and from small partial indexes the work of
	// any age that is not settled or needs an operator, as visible in sc.
	Overview(ctx context.Context, sc Scope, q OverviewQuery) (Overview, error)
	// InsertReplay records an operator's replay of a message: m is queued
	// (the workers are woken) or, when the original's body has expired,
	// already dead with body_expired. A replay whose m.BlobKey no stored
	// body names any more fails with ENOTFOUND and records nothing: the
	// original's body expired meanwhile.
	InsertReplay(ctx context.Context, m *Message, audit ...AuditEntry) error
	// EraseBodies deletes, on an org's request, the stored bodies of an
	// endpoint's messages received in [since, until) that are visible in
	// sc, keeping the messages and their deduplication identities (so an
	// erased delivery re-sent later is still a duplicate). It returns how
	// many bodies it erased. now is when, recorded with the bodies'
	// objects (BlobRefs).
	EraseBodies(ctx context.Context, now time.Time, sc Scope, endpointID string, since, until time.Time, audit ...AuditEntry) (int, error)

	Event(ctx context.Context, sc Scope, id string) (Event, error)
	ListEvents(ctx context.Context, sc Scope, f EventFilter) (Page[Event], error)
	// CountEvents counts what ListEvents would list over all pages.
	CountEvents(ctx context.Context, sc Scope, f EventFilter) (int, error)
	// Deliveries lists an event's delivery attempts, oldest first.
	Deliveries(ctx context.Context, sc Scope, eventID string) ([]Delivery, error)
	// EventRoutes lists the routes of events visible in sc (each event's
	// way to one consumer: its state, the attempts it spent, its last
	// error), by event and then consumer.
	EventRoutes(ctx context.Context, sc Scope, eventIDs []string) ([]Route, error)
	// RerouteEvent is the operator's re-route (see Reroute): the event back
	// to pending, due now, with a fresh budget of attempts. Its deliveries
	// are kept, so consumers that handled it are not called again.
	RerouteEvent(ctx context.Context, sc Scope, id string, now time.Time, audit ...AuditEntry) error
	// RetryNow is the operator's retry now (DESIGN §20): the waiting routes
	// sel selects, visible in sc and not leased, of at most max events
	// (the earliest due first), become due at now without spending or
	// restoring an attempt, and each tripped consumer among them gets its
	// breaker's probe at now. It records each audit entry WithCount, and
	// wakes the routers. With dryRun it writes nothing. It answers how many
	// events it made due and the first RetryItems of them.
	RetryNow(ctx context.Context, sc Scope, sel RetrySelection, now time.Time, max int, dryRun bool, audit ...AuditEntry) (Retried, error)
}

// Retention forgets what is older than its org keeps.
type Retention interface {
	// DropBodies deletes up to limit stored bodies of settled messages
	// received more than their org's body retention (def where the org sets
	// none) before now, returning how many. The messages, and their
	// deduplication identities, stay.
	DropBodies(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error)
	// DeleteSettled deletes up to limit settled messages received more than
	// their org's retention (def where the org sets none) before now, with
	// their bodies, identities, events and deliveries, once none of their
	// events is still being routed; it returns how many messages it deleted.
	DeleteSettled(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error)
	// DeleteExpiredSessions deletes up to limit console sessions that
	// expired before now, returning how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error)
}

// BlobRefs tells the blob sweeper which objects the stored bodies still
// name. Every statement that deletes a body whose object is in the blob
// store records the object's key, in the same transaction, as a pending
// delete. A replay names its original's object rather than a copy, and
// InsertReplay names an object only while another body still names it
// (ENOTFOUND otherwise): once no body names an object, none ever
// will again, so the sweeper may delete it. A pending delete keeps when it
// was recorded (the now of the statement that deleted the body; the latest
// of them when several bodies naming the object went at different times):
// a store restored to a time before it names the object, so while restores
// may reach back that far (--replicate-retention) the object is kept.
type BlobRefs interface {
	// BlobsReferenced reports which of keys a stored body names.
	BlobsReferenced(ctx context.Context, keys []string) (map[string]bool, error)
	// PendingBlobDeletes lists up to limit keys whose bodies were deleted,
	// those recorded longest ago first; with before set, only those
	// recorded before it.
	PendingBlobDeletes(ctx context.Context, before time.Time, limit int) ([]string, error)
	// ForgetBlobDeletes removes keys from the pending deletes, once their
	// objects are deleted (or named again by a body).
	ForgetBlobDeletes(ctx context.Context, keys []string) error
}

// ReplayJobs keeps window replays and bulk jobs, so any process reports
// and runs them.
type ReplayJobs interface {
	// CreateReplayJob records a new window replay, unleased, for a runner to
	// claim.
	CreateReplayJob(ctx context.Context, j ReplayJob, audit ...AuditEntry) error
	// ReplayJob returns a window replay visible in sc.
	ReplayJob(ctx context.Context, sc Scope, id string) (ReplayJob, error)
	// ClaimReplayJob takes an unfinished job whose lease has ended (or
	// that never had one): of the org whose unfinished jobs were saved
	// least recently, the one saved least recently, so that orgs take
	// turns and then their jobs do. It is leased until now+lease to a new
	// Owner; ok is false when there is none.
	ClaimReplayJob(ctx context.Context, now time.Time, lease time.Duration) (j ReplayJob, ok bool, err error)
	// SaveReplayJob records a claimed job's progress (Done, Cursor, Error,
	// FinishedAt) and holds its lease until now+lease. It fails with ESTALE
	// when j.Owner no longer holds the job: another runner has claimed it.
	SaveReplayJob(ctx context.Context, j ReplayJob, now time.Time, lease time.Duration) error
	// SaveJobBatch writes one batch of a claimed bulk job and the job's
	// progress in one transaction, while j.Owner holds it: b's events
	// still re-routable go back to pending as RerouteEvent takes them (the
	// others are skipped), b's replays are recorded as InsertReplay records
	// them. j.Done is the count before the batch; the job records it plus
	// the rows the batch took, and that many are returned. It fails with
	// ESTALE, writing nothing, when j.Owner no longer holds the job, and
	// with ENOTFOUND, writing nothing, when a replay names an object no
	// stored body names any more.
	SaveJobBatch(ctx context.Context, j ReplayJob, b JobBatch, now time.Time, lease time.Duration) (int, error)
}

// Audit is the log of operator actions.
type Audit interface {
	// RecordAudit appends an operator action on its own.
	RecordAudit(ctx context.Context, a AuditEntry) error
	// ListAudit lists audit entries visible in sc, newest first.
	ListAudit(ctx context.Context, sc Scope, f AuditFilter) (Page[AuditEntry], error)
}

// MasterKeys records which master key the store's secrets are sealed
// with, so a process started with another key refuses to serve.
type MasterKeys interface {
	// KeyFingerprint is the fingerprint of the master key the store's
	// secrets are sealed with; "" before one is recorded.
	KeyFingerprint(ctx context.Context) (string, error)
	// RecordKeyFingerprint records fp unless a fingerprint is recorded
	// already, and returns the one the store holds: fp, or the earlier one.
	RecordKeyFingerprint(ctx context.Context, fp string) (string, error)
}

// Sessions keeps console sign-ins, so every process of a deployment
// knows them and a sign-out ends them everywhere.
type Sessions interface {
	// CreateSession records a console sign-in, with its audit entries.
	CreateSession(ctx context.Context, s ConsoleSession, audit ...AuditEntry) error
	// SessionByHash finds a session by the SHA-256 of its cookie value:
	// ENOTFOUND once it expired at now or was revoked, when its org is
	// deleted, or when the org's API key it was signed in with has been
	// revoked.
	SessionByHash(ctx context.Context, idHash []byte, now time.Time) (ConsoleSession, error)
	// RevokeSession ends a session for every process (sign-out), with its
	// audit entries.
	RevokeSession(ctx context.Context, idHash []byte, at time.Time, audit ...AuditEntry) error
}

// Issues keeps the issues the settles decide (DESIGN §20): the route and
// message settles write them in their own transactions (see
// RouteSettleDecision.Issues); these are the operator's reads and hand,
// and the backlog check's reads and writes.
type Issues interface {
	// ListIssues lists the issues visible in sc that q selects, the last
	// seen first (keyset paged on last_seen_at, then id). Lists and counts
	// leave out the issues of deleted consumers and connections.
	ListIssues(ctx context.Context, sc Scope, q IssueQuery) (Page[Issue], error)
	Issue(ctx context.Context, sc Scope, id string) (Issue, error)
	// IssueItems lists the events (or messages) an issue touched that are
	// still kept, the last failed first (keyset paged on the failure's
	// time, then the item's id).
	IssueItems(ctx context.Context, sc Scope, id string, q IssueItemsQuery) (Page[IssueItem], error)
	// SetIssueStatus moves an issue by an operator's hand, as
	// CheckIssueStatus allows (EINVALID otherwise), with its audit entries,
	// and returns it as it now stands.
	SetIssueStatus(ctx context.Context, sc Scope, id string, to IssueStatus, at time.Time, audit ...AuditEntry) (Issue, error)
	// CountOpenIssues counts the open issues visible in sc.
	CountOpenIssues(ctx context.Context, sc Scope) (int, error)
	// Backlogs reads, for the backlog check, every consumer whose oldest
	// due or held waiting route became due before since, and every
	// backlog issue that is open or acknowledged.
	Backlogs(ctx context.Context, since time.Time) (BacklogRead, error)
	// WriteIssues writes issues decided outside a settle (the backlog
	// check), with their notices, in one transaction.
	WriteIssues(ctx context.Context, issues []IssueWrite, notices []Notice) error
}

// Wake-up topics.
const (
	TopicMessages = "messages"
	TopicEvents   = "events"
)

// OriginalRequest is what rules read of the request an event came from.
type OriginalRequest struct {
	Query  string
	Header http.Header
}

// Stats is a snapshot of the store for metrics. Labels never carry ids.
type Stats struct {
	Messages map[MessageState]int
	// Events counts by provider and state.
	Events map[[2]string]int
	// OldestDueMessage and OldestDueEvent are when the longest-waiting due
	// work became due (zero when none is due).
	OldestDueMessage, OldestDueEvent time.Time
}

// Page is one page of a keyset-paginated list.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// MessageFilter selects messages for listing.
type MessageFilter struct {
	EndpointID string
	State      MessageState
	// Received bounds received_at to [Since, Until) when set.
	Since, Until time.Time
	// Originals leaves out replays.
	Originals bool
	// ProviderEventID selects the messages of one provider event.
	ProviderEventID string
	// Type selects the messages one of whose events has this type.
	Type string
	// Search selects the messages one of whose events' data contains
	// Search.Match and whose raw body (its first SearchedBodyBytes) holds
	// every one of Search.Words.
	Search Search
	Limit  int
	Cursor string // the last id of the previous page
}

// EventFilter selects events for listing.
type EventFilter struct {
	State EventState
	Type  string
	// Created bounds created_at to [Since, Until) when set.
	Since, Until time.Time
	// ConsumerID selects the events delivered (or attempted) to one
	// consumer.
	ConsumerID string
	// Search selects the events whose data contains Search.Match and
	// holds every one of Search.Words.
	Search Search
	Limit  int
	Cursor string
}

package intake

import (
	"context"
	"encoding/json"
	"time"
)

// EventType is what intake has learnt of one event type of one connection
// (DESIGN §13): when it was first and last seen, how often, an example,
// and a JSON Schema inferred from the events received, so an operator sees
// what a provider sends without reading its documentation.
type EventType struct {
	OrgID          string
	ConnectionID   string
	ConnectionName string
	Type           string
	FirstSeenAt    time.Time
	LastSeenAt     time.Time
	// Total counts every event of the type; Count24h those received in
	// the last 24 hours (by the hour: the current hour and the 23 before).
	Total    int64
	Count24h int64
	// Schema is a JSON Schema (draft 2020-12) document; Example the data
	// of the event that last changed it, ExampleEventID that event's id.
	Schema         json.RawMessage
	Example        json.RawMessage
	ExampleEventID string
	// Version counts the schema's changes; a learner writes a schema only
	// over the version it read.
	Version int64
}

// EventTypeDetail is an event type with its history: events per day and
// the changes of shape its events showed.
type EventTypeDetail struct {
	EventType
	Days    []EventTypeDay    // oldest first, days with events only
	Changes []EventTypeChange // newest first, at most MaxEventTypeChanges
}

// EventTypeDay counts the events of a type received on one UTC day.
type EventTypeDay struct {
	Day   time.Time
	Count int64
}

// Kinds of EventTypeChange.
const (
	ChangeAdded       = "added"
	ChangeRemoved     = "removed"
	ChangeTypeChanged = "type_changed"
)

// EventTypeChange is one drift of an event type's shape: a field added, a
// field every earlier event had gone missing, or a field of a type not
// seen there before. ExampleEventID is the event that showed it.
type EventTypeChange struct {
	ID             string
	OrgID          string
	ConnectionID   string
	Type           string
	At             time.Time
	Path           string // JSONPath into the event's data: $.customer.email
	Change         string
	From, To       []string // JSON Schema type names before and in the event
	ExampleEventID string
}

// EventTypeKey names an event type of a connection.
type EventTypeKey struct {
	ConnectionID string
	Type         string
}

// EventTypeUpdate is what a catalog learner writes for one event type:
// counts to add, and, when Learnt, the schema it merged over Version (0:
// none yet) with the example, the changes and the notices that go with it.
type EventTypeUpdate struct {
	OrgID string
	EventTypeKey
	// Count is how many events to add, received in [First, Last]; Hours
	// splits it by the hour they were received in.
	Count       int64
	First, Last time.Time
	Hours       map[time.Time]int64

	Learnt         bool
	Version        int64
	Schema         json.RawMessage
	Example        json.RawMessage
	ExampleEventID string
	Changes        []EventTypeChange
	Notices        []Notice
}

// EventTypeFilter selects event types for listing.
type EventTypeFilter struct {
	ConnectionID string // "": every connection
	// Now is when Count24h's window ends.
	Now time.Time
}

// EventTypeOther is the type a connection's catalog counts the events of
// every type past its bound under (DESIGN §26), with no schema learnt
// from them: a provider naming ever new types grows the catalog no more.
const EventTypeOther = "other"

// EventTypeHistory is how long an event type's counts per hour are kept
// (its per-day history); its first and last seen and total stay.
const EventTypeHistory = 30 * 24 * time.Hour

// MaxEventTypeChanges is how many of its latest changes an event type's
// detail carries.
const MaxEventTypeChanges = 100

// EventTypes keeps the event-type catalog.
type EventTypes interface {
	// EventTypeStates reads the schema state (Schema, Version) of the keys
	// that are catalogued; a key missing from the map is not yet.
	EventTypeStates(ctx context.Context, keys []EventTypeKey) (map[EventTypeKey]EventType, error)
	// EventTypeCounts reads how many types each of the connections has
	// catalogued (its EventTypeOther type among them); a connection with
	// none is missing from the map.
	EventTypeCounts(ctx context.Context, connectionIDs []string) (map[string]int, error)
	// RecordEventTypes writes a learner's updates in one transaction:
	// each update's counts are added; a Learnt update's schema, example,
	// changes and notices are written only if the type's schema is still
	// at the update's Version, and the keys of those that were not (another
	// process wrote first) are returned, to be read and merged again.
	RecordEventTypes(ctx context.Context, ups []EventTypeUpdate) (stale []EventTypeKey, err error)
	// ListEventTypes lists the catalogued types of the live connections
	// visible in sc, by connection name then type.
	ListEventTypes(ctx context.Context, sc Scope, f EventTypeFilter) ([]EventType, error)
	// EventType reads one catalogued type with its days (since
	// now-EventTypeHistory) and its latest changes.
	EventType(ctx context.Context, sc Scope, key EventTypeKey, now time.Time) (EventTypeDetail, error)
	// PruneEventTypeHours deletes the counts of hours before before,
	// returning how many it deleted.
	PruneEventTypeHours(ctx context.Context, before time.Time) (int, error)
}

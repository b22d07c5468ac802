package intake

import (
	"encoding/json"
	"time"
)

// EventState is where an event stands in routing.
type EventState string

// Event states, exactly as the design names them.
const (
	EventPending    EventState = "pending"
	EventDelivered  EventState = "delivered"
	EventRetrying   EventState = "retrying"
	EventDead       EventState = "dead"
	EventNoConsumer EventState = "no_consumer"
	// EventFiltered: consumers' type patterns matched, but every one of
	// their filters (or transforms) declined the event. By design, so it is
	// not listed as unclaimed; an operator may re-route it.
	EventFiltered EventState = "filtered"
)

// EventStates lists every event state.
var EventStates = []EventState{EventPending, EventDelivered, EventRetrying, EventDead, EventNoConsumer, EventFiltered}

// eventTransitions is the one table every event state write goes through.
// dead|no_consumer|filtered → pending is the operator's re-route.
var eventTransitions = map[EventState][]EventState{
	EventPending:    {EventDelivered, EventRetrying, EventNoConsumer, EventFiltered},
	EventRetrying:   {EventRetrying, EventDelivered, EventDead, EventNoConsumer, EventFiltered},
	EventDead:       {EventPending},
	EventNoConsumer: {EventPending},
	EventFiltered:   {EventPending},
}

// Valid reports whether s is a declared event state.
func (s EventState) Valid() bool {
	for _, v := range EventStates {
		if s == v {
			return true
		}
	}
	return false
}

// CheckEventTransition returns an EINVALID error unless from → to is in the
// event transition table.
func CheckEventTransition(from, to EventState) error {
	for _, t := range eventTransitions[from] {
		if t == to {
			return nil
		}
	}
	return Errorf(EINVALID, "event cannot go from %s to %s", from, to)
}

// EventKind says what sort of fact an event is.
type EventKind string

// Event kinds.
const (
	KindEvent        EventKind = "event"
	KindChangeNotice EventKind = "change_notice"
	KindLinkUnfurl   EventKind = "link_unfurl"
)

// MaxEventData is the most JSON an event carries; adapters trim larger
// payloads and set DataTruncated.
const MaxEventData = 64 << 10

// MaxEventsPerMessage is the most events one message makes; a message whose
// provider or script names more is dead with ErrCodeTooManyEvents.
const MaxEventsPerMessage = 1000

// Subject names the record an event is about and the app that initiated it.
type Subject struct {
	App      string `json:"app"`
	RecordID string `json:"record_id"`
}

// Event is a verified, typed fact interpreted from a message; consumers
// deduplicate on its ID.
type Event struct {
	ID              string
	OrgID           string
	ConnectionID    string
	MessageID       string
	Provider        string
	Type            string
	Kind            EventKind
	ProviderEventID string
	OccurredAt      time.Time
	ReceivedAt      time.Time
	Subject         *Subject
	Data            json.RawMessage
	DataTruncated   bool
	ObjectIDs       []string
	State           EventState
	Attempt         int
	MaxAttempts     int
	NextAttemptAt   time.Time
	Replay          bool
	ReplayOf        string
	CreatedAt       time.Time
	// TraceParent is the W3C traceparent of the processing attempt that
	// created the event, so its routing continues that trace.
	TraceParent string
}

// AwaitsFanOut reports whether e waits for a router's fan-out: it is on
// the event queue (a planned event is created fanned out, off it).
func (e *Event) AwaitsFanOut() bool {
	return (e.State == EventPending || e.State == EventRetrying) && !e.NextAttemptAt.IsZero()
}

// Unrouted reports whether any of the events awaits its fan-out.
func Unrouted(events []Event) bool {
	for i := range events {
		if events[i].AwaitsFanOut() {
			return true
		}
	}
	return false
}

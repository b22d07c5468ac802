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
// dead|no_consumer|filtered → pending is the operator's re-route. A step
// marked settle is no transition of its own but one a settle of routes
// writes in one step (CheckEventPath): it leaves a waiting event where it
// was, or passes through a state on the way (via).
var eventTransitions = map[EventState][]eventStep{
	EventPending: {{to: EventDelivered}, {to: EventRetrying}, {to: EventNoConsumer}, {to: EventFiltered},
		// A fan-out whose routes all wait leaves the event pending.
		{to: EventPending, settle: true},
		// The first failed call was also the last.
		{to: EventDead, settle: true, via: EventRetrying}},
	EventRetrying:   {{to: EventRetrying}, {to: EventDelivered}, {to: EventDead}, {to: EventNoConsumer}, {to: EventFiltered}},
	EventDead:       {{to: EventPending}},
	EventNoConsumer: {{to: EventPending}},
	EventFiltered:   {{to: EventPending}},
}

// eventStep is one entry of the event transition table.
type eventStep struct {
	to EventState
	// settle: only a settle of routes takes the step (CheckEventPath),
	// passing through via ("" for none) on its way.
	settle bool
	via    EventState
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

// CheckEventTransition returns an EINVALID error unless from → to is a
// transition of the event table.
func CheckEventTransition(from, to EventState) error {
	for _, t := range eventTransitions[from] {
		if t.to == to && !t.settle {
			return nil
		}
	}
	return Errorf(EINVALID, "event cannot go from %s to %s", from, to)
}

// CheckEventPath is CheckEventTransition for a settle of routes, which may
// also take the table's settle steps: stay pending, or pass through
// retrying on its way (pending → dead: the first failure was also the
// last).
func CheckEventPath(from, to EventState) error {
	for _, t := range eventTransitions[from] {
		if t.to == to {
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

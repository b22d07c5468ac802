package intake

import "time"

// Overview is where a scope's work stands, for the console's overview page:
// what arrived in each hour of a window and where each of those messages
// stands now, and the work of any age that is not settled or needs an
// operator. Every figure is exact.
type Overview struct {
	// Hours[i] counts the originals (not replays) received in the i-th hour
	// from the query's Since, by their state now.
	Hours []map[MessageState]int
	// Live counts every message queued, processing or failed, however old.
	Live map[MessageState]int
	// QueuedBefore counts the queued messages received before the query's
	// QueuedBefore.
	QueuedBefore int
	// Events counts every event pending, retrying, dead or no_consumer.
	Events map[EventState]int
	// OldestDueMessage is when the longest-waiting message due at the
	// query's Now became due (zero when none is due).
	OldestDueMessage time.Time
	// OldestDueEvent is when the longest-waiting event due for its fan-out
	// became due, and which event it is (zero, "": none is due).
	OldestDueEvent   time.Time
	OldestDueEventID string
	// OldestDueRoute is when the longest-waiting due call became due, of
	// a consumer neither paused nor tripped until later, and whose call it
	// is (zero, "": none is due).
	OldestDueRoute         time.Time
	OldestDueRouteConsumer string
	// Replica is how the embedded store's replica stands (--replicate),
	// filled by the control plane for staff; nil when the store is not
	// replicated or the overview is an org's.
	Replica *ReplicaState
}

// ReplicaState is how far the embedded store's replica is behind.
type ReplicaState struct {
	// Lag is how long ago the replica last held every commit made by then.
	Lag time.Duration
	// LastSync is when the last sync succeeded; zero: none yet.
	LastSync time.Time
	// Errors counts the syncs that failed since the server started.
	Errors int64
	// Failing is the last sync's error while syncs fail, "" otherwise.
	Failing string
}

// OverviewQuery selects an Overview.
type OverviewQuery struct {
	Since        time.Time // the start of the first hour
	Hours        int       // how many hours, at most MaxOverviewHours
	Now          time.Time
	QueuedBefore time.Time
}

// MaxOverviewHours bounds an overview's window: a week of hours.
const MaxOverviewHours = 7 * 24

// LiveMessageStates are the states a message leaves again.
var LiveMessageStates = []MessageState{MessageQueued, MessageProcessing, MessageFailed}

// NewOverview checks q and makes the empty overview a store fills: one map
// of counts per hour of the window.
func NewOverview(q OverviewQuery) (Overview, error) {
	if q.Hours <= 0 || q.Hours > MaxOverviewHours {
		return Overview{}, Errorf(EINVALID, "an overview spans 1 to %d hours", MaxOverviewHours)
	}
	out := Overview{Hours: make([]map[MessageState]int, q.Hours), Live: map[MessageState]int{}, Events: map[EventState]int{}}
	for i := range out.Hours {
		out.Hours[i] = map[MessageState]int{}
	}
	return out, nil
}

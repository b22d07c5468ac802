package intake

import "time"

// MessageSummary is where a scope's messages stand, for the console's
// overview: what arrived in each hour of a window and where each of those
// stands now, and the unsettled work of any age.
type MessageSummary struct {
	// Hours[i] counts the originals (not replays) received in the i-th hour
	// from the query's Since, by their state now.
	Hours []map[MessageState]int
	// Live counts every message queued, processing or failed, however old.
	Live map[MessageState]int
	// QueuedBefore counts the queued messages received before the query's
	// QueuedBefore.
	QueuedBefore int
}

// SummaryQuery selects a MessageSummary.
type SummaryQuery struct {
	Since        time.Time // the start of the first hour
	Hours        int       // how many hours, at most MaxSummaryHours
	QueuedBefore time.Time
}

// MaxSummaryHours bounds a summary's window: a week of hours.
const MaxSummaryHours = 7 * 24

// LiveMessageStates are the states a message leaves again.
var LiveMessageStates = []MessageState{MessageQueued, MessageProcessing, MessageFailed}

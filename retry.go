package intake

import "fmt"

// RetrySelection selects the waiting routes an operator's retry now makes
// due (DESIGN §20): one event's routes (EventID), one consumer's
// (ConsumerID), or, with ConsumerID, only those of EventIDs (an issue's
// events).
type RetrySelection struct {
	EventID    string
	ConsumerID string
	EventIDs   []string
	// IssueID names the issue whose events EventIDs are, for the audit
	// log; the store ignores it.
	IssueID string
}

// Validate checks that s selects one event, or one consumer's routes.
func (s RetrySelection) Validate() error {
	switch {
	case s.EventID != "" && (s.ConsumerID != "" || len(s.EventIDs) > 0):
		return Errorf(EINVALID, "a retry selects one event, or a consumer's routes")
	case s.EventID != "":
		return CheckID("event_id", s.EventID)
	case s.ConsumerID == "":
		return Errorf(EINVALID, "a retry selects one event, or a consumer's routes")
	}
	if err := CheckID("consumer_id", s.ConsumerID); err != nil {
		return err
	}
	if s.IssueID != "" {
		if err := CheckID("issue_id", s.IssueID); err != nil {
			return err
		}
	}
	for _, id := range s.EventIDs {
		if err := CheckID("event_id", id); err != nil {
			return err
		}
	}
	return nil
}

// RetryItems is how many of the events a retry made due its answer names.
const RetryItems = 20

// Retried is what a retry now made due (or, for a dry run, would): the
// number of events, and the first RetryItems of them, earliest due first.
type Retried struct {
	Count int
	Items []Event
}

// CheckRetry is the rule of an operator's retry of one event: an event
// whose routes are all settled for good is re-routed, not retried.
func CheckRetry(id string, state EventState) error {
	if CheckEventTransition(state, EventPending) == nil {
		return Errorf(ECONFLICT, "event %s is %s: %s events are re-routed, not retried: POST /api/v1/events/%s/reroute", id, state, state, id)
	}
	return nil
}

// WithCount is a bulk action's audit entry once its store knows how many
// rows the action took.
func (a AuditEntry) WithCount(n int) AuditEntry {
	if a.Detail != "" {
		a.Detail += " "
	}
	a.Detail += fmt.Sprintf("count=%d", n)
	return a
}

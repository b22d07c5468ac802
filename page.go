package intake

// Page sizes: a list asks for at most MaxPageSize rows, DefaultPageSize
// when it names none.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// PageLimit is the page size a list asking for n reads.
func PageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// Key is the message's place in its lists.
func (m Message) Key() string { return m.ID }

// Key is the event's place in its lists.
func (e Event) Key() string { return e.ID }

// Key is the entry's place in the audit log.
func (a AuditEntry) Key() string { return a.ID }

// Reroute is the rule of an operator's re-route, for a store to apply
// inside its transaction: an event in state may go back to pending only as
// the transition table allows, and its attempt number keeps counting (stale
// attempts stay stale) while its budget starts afresh from it. It returns
// the new max attempts.
func Reroute(state EventState, attempt int) (maxAttempts int, err error) {
	if CheckEventTransition(state, EventPending) != nil {
		return 0, Errorf(ECONFLICT, "only dead, no_consumer or filtered events can be re-routed; this one is %s", state)
	}
	return attempt + DefaultMaxAttempts, nil
}

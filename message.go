package intake

import (
	"net/http"
	"time"
)

// MessageState is where a received message stands in its lifecycle.
type MessageState string

// Message states, exactly as the design names them.
const (
	MessageQueued     MessageState = "queued"
	MessageProcessing MessageState = "processing"
	MessageProcessed  MessageState = "processed"
	MessageIgnored    MessageState = "ignored"
	MessageFailed     MessageState = "failed"
	MessageDead       MessageState = "dead"
)

// MessageStates lists every message state.
var MessageStates = []MessageState{MessageQueued, MessageProcessing, MessageProcessed, MessageIgnored, MessageFailed, MessageDead}

// messageTransitions is the one table every message state write goes through.
var messageTransitions = map[MessageState][]MessageState{
	MessageQueued:     {MessageProcessing},
	MessageProcessing: {MessageProcessed, MessageIgnored, MessageFailed, MessageDead},
	MessageFailed:     {MessageProcessing},
}

// Valid reports whether s is a declared message state.
func (s MessageState) Valid() bool {
	for _, v := range MessageStates {
		if s == v {
			return true
		}
	}
	return false
}

// CheckMessageTransition returns an EINVALID error unless from → to is in the
// message transition table.
func CheckMessageTransition(from, to MessageState) error {
	for _, t := range messageTransitions[from] {
		if t == to {
			return nil
		}
	}
	return Errorf(EINVALID, "message cannot go from %s to %s", from, to)
}

// Outcomes recorded on a settled message.
const (
	OutcomeEvents    = "events"    // processed into one or more events
	OutcomeNoEvents  = "no_events" // verified, but the provider sent nothing to act on
	OutcomeChallenge = "challenge" // an inline handshake, answered at ingress
	OutcomeSignature = "signature" // ignored: the signature did not verify
	OutcomeDuplicate = "duplicate" // ignored: the same identity was processed before
	OutcomeConflict  = "conflict"  // ignored: same provider event id, different content
	OutcomeFiltered  = "filtered"  // processed, but the connection's filter dropped every event
)

// Error codes recorded on failed and dead messages.
const (
	ErrCodeTransient    = "transient"
	ErrCodePermanent    = "permanent"
	ErrCodeLeaseExpired = "lease_expired"
	ErrCodeBodyExpired  = "body_expired"
	ErrCodeScript       = "script" // the connection's interpret script failed
	// ErrCodeTooManyEvents: the message names more than MaxEventsPerMessage
	// events.
	ErrCodeTooManyEvents = "too_many_events"
)

// DefaultMaxAttempts is how many processing or routing attempts run before a
// message or event is dead.
const DefaultMaxAttempts = 6

// Message is one HTTP request received at an endpoint, and the work item that
// processes it.
type Message struct {
	ID           string
	OrgID        string
	ConnectionID string
	EndpointID   string
	Method       string
	Query        string
	Header       http.Header
	Body         []byte
	// BlobKey names the body's object in the blob store when it is too
	// large for the database; Body is then nil until a reader fills it.
	BlobKey         string
	Digest          string // hex SHA-256 of the body
	ReceivedAt      time.Time
	State           MessageState
	Attempt         int
	MaxAttempts     int
	NextAttemptAt   time.Time
	LeaseUntil      time.Time
	ProviderEventID string
	Outcome         string
	ErrorCode       string
	ErrorMessage    string
	ReplayOf        string
	EventIDs        []string
	BodyExpired     bool
	// DeferredBody is the size of a body the database keeps that was
	// larger than ClaimBodyLimit, so a claim did not read it: Body is nil
	// until the worker reads it (MessageQueue.MessageBody) within its body
	// memory budget. 0 when the claim read the body.
	DeferredBody int64
	// TraceParent is the W3C traceparent of the request that brought the
	// message, so its processing continues that trace; "" when untraced.
	TraceParent string
}

// Attempt is the record of one settled processing attempt of a message:
// what it came to, and why.
type Attempt struct {
	Attempt      int
	State        MessageState
	Outcome      string
	ErrorCode    string
	ErrorMessage string
	At           time.Time
}

// Claim is a numbered processing attempt of a message held under a lease.
// Only the holder of the current attempt can settle it.
type Claim struct {
	Message    Message
	Attempt    int
	LeaseUntil time.Time
}

// MessageStatesInto lists the states from which the table allows a move to
// to, so claim queries are built from the table rather than beside it.
func MessageStatesInto(to MessageState) []MessageState {
	var out []MessageState
	for _, from := range MessageStates {
		if CheckMessageTransition(from, to) == nil {
			out = append(out, from)
		}
	}
	return out
}

// ClaimBodyLimit is the largest body a claim reads with its message. A
// larger one kept in the database is read on its own by the worker that
// processes the message, charged to the body memory budget first, so a
// batch of claims never holds a batch of large bodies uncounted.
const ClaimBodyLimit = 256 << 10

// CheckIngest is the rule for what ingest records: a received message
// queued for any worker to claim, or one handed over to the local worker,
// which the same commit leases as its first attempt (processing, attempt 1,
// a lease that ends after its receipt). A replay uses InsertReplay.
func CheckIngest(m *Message) error {
	switch {
	case m.State == MessageQueued:
		return nil
	case m.State == MessageProcessing && m.Attempt == 1 && m.LeaseUntil.After(m.ReceivedAt):
		return nil
	}
	return Errorf(EINVALID, "ingest records a queued message, or one handed over as processing at attempt 1 under a lease; "+
		"not %s at attempt %d (a replay uses InsertReplay)", m.State, m.Attempt)
}

package intake

import "time"

// DigestIdentityTTL is how long a body digest identifies a message when the
// provider names no event id.
const DigestIdentityTTL = 24 * time.Hour

// Identity is what makes two messages of one connection the same delivery.
type Identity struct {
	Key       string // "id:<provider event id>" or "digest:<endpoint>:<sha256>"
	Digest    string
	EventType string
	MessageID string
	ExpiresAt time.Time // zero = never
}

// IdentityFor names a message's identity: the provider event id when the
// adapter gives one, else the body digest scoped to the endpoint for 24 h.
// Change notices without an id have none: identical pings are separate
// signals. ok is false when the message is not deduplicated.
func IdentityFor(m *Message, providerEventID, eventType string, kind EventKind) (Identity, bool) {
	id := Identity{Digest: m.Digest, EventType: eventType, MessageID: m.ID}
	switch {
	case providerEventID != "":
		id.Key = "id:" + providerEventID
	case kind == KindChangeNotice:
		return Identity{}, false
	default:
		id.Key = "digest:" + m.EndpointID + ":" + m.Digest
		id.ExpiresAt = m.ReceivedAt.Add(DigestIdentityTTL)
	}
	return id, true
}

// Judge decides what a candidate identity means given the one already on
// record (nil if none or expired): "" to proceed, or the ignore outcome
// (duplicate, conflict).
func Judge(prior *Identity, candidate Identity) string {
	if prior == nil {
		return ""
	}
	if prior.Digest == candidate.Digest && prior.EventType == candidate.EventType {
		return OutcomeDuplicate
	}
	return OutcomeConflict
}

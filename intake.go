// Package intake holds the domain of the inbound webhook gateway: the nouns
// (orgs, connections, endpoints, messages, events), their state machines,
// the error codes, and the Store interface that every storage backend
// implements. It imports nothing of the project's.
package intake

import (
	"time"

	"github.com/google/uuid"
)

// Clock is the source of time for everything that schedules or judges time,
// so retry, lease and tolerance logic is tested without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// NewID returns a new UUIDv7: time-ordered, so keyset pagination and index
// inserts stay local.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// ValidID reports whether s is a well-formed UUID, so malformed ids from the
// API are refused before they reach a query.
func ValidID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// CheckID refuses a malformed id given in field, naming it (at most 64
// bytes of it) in the error.
func CheckID(field, id string) error {
	if !ValidID(id) {
		if len(id) > 64 {
			id = id[:64] + "…"
		}
		return Errorf(EINVALID, "%s %q is not a valid id", field, id)
	}
	return nil
}

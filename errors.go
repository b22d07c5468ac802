package intake

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. The HTTP layer maps each to a status in one place.
const (
	ECONFLICT     = "conflict"
	EINTERNAL     = "internal"
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	ETOOLARGE     = "too_large"
	EUNAVAILABLE  = "unavailable"
	// EBUSY means the caller's org is at its budget for this door (too
	// many at once, or too many a second): try again after RetryAfter.
	EBUSY = "too_many_requests"
	// ESTALE means a worker's attempt is no longer current: its lease was taken
	// over, or the row already settled. The worker drops its result.
	ESTALE = "stale"
	// EVERSION means a row changed since the version a change was made
	// over: the change was not written.
	EVERSION = "version_mismatch"
)

// Error is an error with a code for programs and a message for people.
type Error struct {
	Code    string
	Message string
	// Err is the cause, kept for logs; it is never shown to callers.
	Err error
	// RetryAfter, when set, is when trying again is worth it: transports
	// answer it as Retry-After.
	RetryAfter time.Duration
}

// RetryAfterOf is err's RetryAfter (0 for none).
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Unavailable marks err, a failure to reach storage, as EUNAVAILABLE: the
// caller answers 503 and may try again; err stays the cause for the logs.
func Unavailable(err error) *Error {
	return &Error{Code: EUNAVAILABLE, Message: "storage is unavailable; try again shortly", Err: err}
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, EINTERNAL for an error without one, and
// "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err; internal errors get a
// generic one so details never leak to API callers.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

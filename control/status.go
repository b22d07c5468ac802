package control

import (
	"net/http"

	"github.com/intakehq/intake"
)

// RetryAfterSeconds is what a 503 for unreachable storage asks callers to
// wait before trying again.
const RetryAfterSeconds = "5"

// HTTPStatus is the one map from error codes to HTTP statuses, for every
// transport.
func HTTPStatus(err error) int {
	switch intake.ErrorCode(err) {
	case "":
		return http.StatusOK
	case intake.EINVALID:
		return http.StatusBadRequest
	case intake.ENOTFOUND:
		return http.StatusNotFound
	case intake.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case intake.EFORBIDDEN:
		return http.StatusForbidden
	case intake.ECONFLICT:
		return http.StatusConflict
	case intake.EVERSION:
		// A change made over a version (If-Match) that is not the row's now.
		return http.StatusPreconditionFailed
	case intake.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case intake.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

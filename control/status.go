package control

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/intakehq/intake"
)

// RetryAfterSeconds is what a 503 for unreachable storage asks callers to
// wait before trying again.
const RetryAfterSeconds = "5"

// RetryAfter is the Retry-After a transport answers err with: the wait the
// error names in whole seconds (at least one), else RetryAfterSeconds.
func RetryAfter(err error) string {
	d := intake.RetryAfterOf(err)
	if d <= 0 {
		return RetryAfterSeconds
	}
	return strconv.Itoa(int(math.Ceil(max(d, time.Second).Seconds())))
}

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
	case intake.EBUSY:
		return http.StatusTooManyRequests
	case intake.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

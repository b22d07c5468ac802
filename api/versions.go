package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/intakehq/intake"
)

// ifMatch is the version a change is made over, from If-Match: the ETag
// a read of the object answered ("3", or W/"3"); 0 when there is none, or
// "*", so that the change is made over whatever is there.
func ifMatch(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil || n <= 0 {
		return 0, intake.Errorf(intake.EINVALID, "If-Match must be the ETag a read of the object answered, like \"3\"")
	}
	return n, nil
}

// setETag names the version of the object an answer shows, for a change
// made over it (If-Match).
func setETag(w http.ResponseWriter, version int64) {
	if version > 0 {
		w.Header().Set("ETag", `"`+strconv.FormatInt(version, 10)+`"`)
	}
}

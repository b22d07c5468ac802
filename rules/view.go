package rules

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/intakehq/intake/internal/redact"
)

// RequestView is what rules see of the request an event came from: header
// names lower-case with their first value, query parameters with their
// first value, credentials (tokens, cookies, keys, and the headers the
// connection names as credentials) removed from both.
func RequestView(header http.Header, rawQuery string, credentials ...string) (headers, query map[string]string) {
	headers = map[string]string{}
	for k, vs := range redact.Headers(header, credentials...) {
		if len(vs) > 0 {
			headers[strings.ToLower(k)] = vs[0]
		}
	}
	query = map[string]string{}
	values, _ := url.ParseQuery(redact.Query(rawQuery))
	for k, vs := range values {
		if len(vs) > 0 {
			query[k] = vs[0]
		}
	}
	return headers, query
}

// TransformContext is a transform's second argument: who the delivery is
// for, on which attempt, and the original request's headers and query as
// RequestView gives them.
type TransformContext struct {
	ConsumerID string            `json:"consumer_id"`
	Consumer   string            `json:"consumer"`
	App        string            `json:"app"`
	Attempt    int               `json:"attempt"`
	Headers    map[string]string `json:"headers"`
	Query      map[string]string `json:"query"`
}

// Package redact is the one rule for what of a stored request operators
// are never shown: credentials (bearer tokens, cookies, API keys, verify
// tokens). The admin API and the console both apply it. Signature headers
// stay visible: a signature only vouches for its own body.
package redact

import (
	"net/http"
	"net/url"
	"strings"
)

// Credential reports whether a header or query parameter name carries a
// credential rather than data about the request.
func Credential(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "cookie", "set-cookie", "key":
		return true
	}
	for _, w := range []string{"auth", "token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "session", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Headers returns the headers without credentials.
func Headers(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !Credential(k) {
			out[k] = v
		}
	}
	return out
}

// Query returns a raw query without credential parameters, keeping the
// others exactly as received.
func Query(raw string) string {
	if raw == "" {
		return ""
	}
	var kept []string
	for _, part := range strings.Split(raw, "&") {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if !Credential(name) {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, "&")
}

// Package redact is the one rule for what of a stored request operators
// and rules are never shown: credentials (bearer tokens, cookies, API keys,
// verify tokens), by a word list, and the headers a connection's config
// names as its credential (provider.CredentialHeaders), passed in. The
// admin API, the console and the rules' view of a request all apply it.
// Signature headers stay visible: a signature only vouches for its own
// body.
package redact

import (
	"net/http"
	"net/url"
	"strings"
)

// Credential reports whether a header or query parameter name carries a
// credential rather than data about the request: by the word list, or
// because it is one of credentials (compared without case).
func Credential(name string, credentials ...string) bool {
	for _, c := range credentials {
		if strings.EqualFold(name, c) {
			return true
		}
	}
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

// Headers returns the headers without credentials, the word list's and
// the named ones.
func Headers(h http.Header, credentials ...string) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !Credential(k, credentials...) {
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

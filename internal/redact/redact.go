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

// URLParam reports whether a url's query parameter carries a credential:
// by Credential's word list, or by the words a url uses for its
// credentials (a signature, an access key) that a request's headers use
// for data.
func URLParam(name string) bool {
	if Credential(name) {
		return true
	}
	n := strings.ToLower(name)
	switch n {
	case "sig", "pass", "pwd", "code":
		return true
	}
	for _, w := range []string{"signature", "access_key", "accesskey", "private_key", "privatekey", "client_key"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// URL shows a url with every credential it carries as ***: the user and
// the password before its host (a NATS token is written as the user, a
// Redis or AMQP user names an account), and each query parameter URLParam
// names. The rest stays as written, so a url without credentials is shown
// unchanged.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, _, hasPassword := strings.Cut(authority[:at], ":")
		shown := ""
		if user != "" {
			shown = "***"
		}
		if hasPassword {
			shown += ":***"
		}
		authority = shown + authority[at:]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if !hasQuery {
		return scheme + "://" + authority + tail
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, kv := range params {
		k, _, _ := strings.Cut(kv, "=")
		name := k
		if n, err := url.QueryUnescape(k); err == nil {
			name = n
		}
		if URLParam(name) {
			params[i] = k + "=***"
		}
	}
	tail = path + "?" + strings.Join(params, "&")
	if hasFragment {
		tail += "#" + fragment
	}
	return scheme + "://" + authority + tail
}

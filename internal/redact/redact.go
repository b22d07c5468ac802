// Package redact is intake's one credential list: the header names, query
// parameter names, url parts and config settings that carry a credential
// (bearer tokens, cookies, API keys, verify tokens, passwords, signed-url
// signatures), and how each is shown without it. control applies it to
// everything operators read (a message's headers and query, a consumer's
// or a notification's url, a connection's config), rules to what filters
// and scripts see of a request, and the server to the urls it logs; no
// transport redacts on its own.
//
// The headers a connection's config names as its credential
// (provider.CredentialHeaders) are passed in, since no word list can know
// them. One exception, written in the list: a header named like a
// signature stays visible, because it only vouches for its own body; in a
// query or a url a signature signs the url itself, so anyone holding it may
// use it, and it is hidden.
package redact

import (
	"net/http"
	"net/url"
	"strings"
)

// entry is one line of the list.
type entry struct {
	word  string // lower case
	whole bool   // the name is the word; otherwise the name contains it
	// signature marks a signature's name: a credential in a query or a url,
	// data in a header.
	signature bool
}

// list is the one credential list.
var list = []entry{
	{word: "auth"}, {word: "token"}, {word: "secret"}, {word: "password"}, {word: "passwd"},
	{word: "api-key"}, {word: "apikey"}, {word: "api_key"}, {word: "session"}, {word: "credential"},
	{word: "access_key"}, {word: "accesskey"}, {word: "private_key"}, {word: "privatekey"}, {word: "client_key"},
	{word: "cookie", whole: true}, {word: "set-cookie", whole: true}, {word: "key", whole: true},
	{word: "pass", whole: true}, {word: "pwd", whole: true},
	{word: "code", whole: true}, // an Azure function's key
	{word: "signature", signature: true}, {word: "sig", whole: true, signature: true},
}

// listed reports whether name is on the list; a signature counts unless
// header.
func listed(name string, header bool) bool {
	n := strings.ToLower(name)
	for _, e := range list {
		if header && e.signature {
			continue
		}
		if e.whole && n == e.word || !e.whole && strings.Contains(n, e.word) {
			return true
		}
	}
	return false
}

// Param reports whether a query parameter carries a credential.
func Param(name string) bool { return listed(name, false) }

// Header reports whether a header carries a credential: by the list, or
// because it is one of credentials (compared without case).
func Header(name string, credentials ...string) bool {
	for _, c := range credentials {
		if strings.EqualFold(name, c) {
			return true
		}
	}
	return listed(name, true)
}

// Setting reports whether a connection's config setting carries a
// credential (Meta's verify_token): its name holds a word for a secret
// value, or ends in key. The list's words for where a credential travels
// are not among them, since such a setting names the place and holds no
// credential (Okta's auth_header names a header).
func Setting(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "secret", "password", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "key")
}

// Headers returns the headers without credentials, the list's and the
// named ones.
func Headers(h http.Header, credentials ...string) http.Header {
	out := http.Header{}
	for k, v := range h {
		if !Header(k, credentials...) {
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
		if !Param(paramName(part)) {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, "&")
}

// paramName is the name of one name=value part of a query, unescaped when
// it can be.
func paramName(part string) string {
	name, _, _ := strings.Cut(part, "=")
	if n, err := url.QueryUnescape(name); err == nil {
		return n
	}
	return name
}

// URL shows a url with every credential it carries as ***: the user and
// the password before its host (a NATS token is written as the user, a
// Redis or AMQP user names an account), and each query parameter Param
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
		if Param(paramName(kv)) {
			k, _, _ := strings.Cut(kv, "=")
			params[i] = k + "=***"
		}
	}
	tail = path + "?" + strings.Join(params, "&")
	if hasFragment {
		tail += "#" + fragment
	}
	return scheme + "://" + authority + tail
}

// Password returns msg, which a client library wrote about u, with u's
// password as ***.
func Password(msg string, u *url.URL) string {
	if u == nil || u.User == nil {
		return msg
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return strings.ReplaceAll(msg, pw, "***")
	}
	return msg
}

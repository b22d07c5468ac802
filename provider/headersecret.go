package provider

import (
	"errors"
	"strings"
)

// Some providers sign nothing: a hook is given a header and a value, which
// it sends with every delivery (Okta's event hooks, BigCommerce's custom
// headers). The secret is that value, in the header config key auth_header
// names (default Authorization), compared in constant time.

// authHeader is the header config key auth_header names.
func authHeader(cfg Config) (string, error) {
	h, err := stringSetting(cfg, "auth_header")
	if err != nil {
		return "", err
	}
	if h == "" {
		return "Authorization", nil
	}
	if strings.ContainsAny(h, " :\r\n") {
		return "", errors.New("config auth_header: want a header name")
	}
	return h, nil
}

// authHeaders is the credential header of such a provider: it carries the
// secret as it is.
func authHeaders(cfg Config) []string {
	h, err := authHeader(cfg)
	if err != nil {
		return nil
	}
	return []string{h}
}

// verifyAuthHeader checks the request's auth header against every secret.
func verifyAuthHeader(provider string, r *Request, secrets [][]byte, cfg Config) error {
	name, err := authHeader(cfg)
	if err != nil {
		return configError(provider, err)
	}
	value := headerValue(r.Header, name)
	if value == "" {
		return sigError("%s: the %s header is missing", provider, name)
	}
	if anySecretEquals(secrets, value) {
		return nil
	}
	return sigError("%s: the %s header matches no secret", provider, name)
}

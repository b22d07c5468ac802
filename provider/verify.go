package provider

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// defaultTolerance is how far a signed timestamp may sit from the received
// time, either way, when a provider documents no other bound.
const defaultTolerance = 5 * time.Minute

// sigError explains why a request does not verify. It wraps ErrSignature and
// must never be given a secret, a signature or a body.
func sigError(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrSignature)
}

// configError reports connection settings Verify cannot work with. It is not
// a signature failure: retrying will not help, and the operator must fix the
// connection.
func configError(provider string, err error) error {
	return Permanent("%s: %v", provider, err)
}

// headerValue returns the first non-empty value of the first named header
// present. Stored headers may not be in canonical form, so the names are
// also matched case-insensitively.
func headerValue(h http.Header, names ...string) string {
	for _, name := range names {
		if v := h.Get(name); v != "" {
			return v
		}
		for k, vs := range h {
			if strings.EqualFold(k, name) && len(vs) > 0 && vs[0] != "" {
				return vs[0]
			}
		}
	}
	return ""
}

// toleranceSetting reads the connection's "tolerance" setting.
func toleranceSetting(cfg Config, def time.Duration) (time.Duration, error) {
	d, err := cfg.Duration("tolerance", def)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, errors.New("config tolerance: want a positive duration")
	}
	return d, nil
}

// checkTimestamp judges a signed unix-seconds timestamp against the time the
// request was received (never the clock of whoever verifies it), so a
// message replayed days later is judged as it was on arrival.
func checkTimestamp(raw string, receivedAt time.Time, tolerance time.Duration) error {
	signedAt, err := parseUnixSeconds(raw)
	if err != nil {
		return err
	}
	return checkTime(signedAt, receivedAt, tolerance, true)
}

// parseUnixSeconds reads a timestamp in unix seconds.
func parseUnixSeconds(raw string) (time.Time, error) {
	sec, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return time.Time{}, sigError("timestamp is not unix seconds")
	}
	return time.Unix(sec, 0), nil
}

// checkTime judges a signing time against the received time. Providers that
// bound only the age of a message (Box, Twitch, Paddle, …) pass
// future=false: a signing time ahead of receipt is then clock skew, and only
// the holder of the secret could have produced it.
func checkTime(signedAt, receivedAt time.Time, tolerance time.Duration, future bool) error {
	if age := receivedAt.Sub(signedAt); age > tolerance {
		return sigError("timestamp is %s before receipt, beyond the %s tolerance", age.Round(time.Second), tolerance)
	}
	if lead := signedAt.Sub(receivedAt); future && lead > tolerance {
		return sigError("timestamp is %s after receipt, beyond the %s tolerance", lead.Round(time.Second), tolerance)
	}
	return nil
}

// unixMillis reads a timestamp in unix milliseconds.
func unixMillis(raw string) (time.Time, error) {
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return time.Time{}, sigError("timestamp is not unix milliseconds")
	}
	return time.UnixMilli(ms), nil
}

// anySecretEquals reports whether value equals one of the non-empty secrets,
// comparing in constant time; for providers that send a shared token rather
// than a signature (GitLab, Postmark, Google, Okta, Microsoft Graph).
func anySecretEquals(secrets [][]byte, value string) bool {
	if value == "" {
		return false
	}
	found := false
	for _, s := range secrets {
		if len(s) > 0 && subtle.ConstantTimeCompare(s, []byte(value)) == 1 {
			found = true
		}
	}
	return found
}

// decodeHexSigs decodes every hex signature that decodes; others are
// skipped, so one garbled value does not hide a good one.
func decodeHexSigs(values ...string) [][]byte {
	var out [][]byte
	for _, v := range values {
		if sig, err := hex.DecodeString(strings.TrimSpace(v)); err == nil && len(sig) > 0 {
			out = append(out, sig)
		}
	}
	return out
}

// decodeBase64Sig decodes a standard base64 signature, padded or not.
func decodeBase64Sig(v string) ([]byte, error) {
	return base64.RawStdEncoding.Strict().DecodeString(strings.TrimRight(strings.TrimSpace(v), "="))
}

// signatureParams splits a header such as "t=1,v1=ab,v1=cd" (sep ",") or
// "ts=1;h1=ab" (sep ";") into its values by key, in order.
func signatureParams(header, sep string) map[string][]string {
	out := map[string][]string{}
	for _, item := range strings.Split(header, sep) {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if ok && v != "" {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// oneParam is the single value of key, "" when it is absent or repeated.
func oneParam(params map[string][]string, key string) string {
	if vs := params[key]; len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// macSum is the HMAC of the concatenated parts under key.
func macSum(h func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(h, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// anyKeySigned reports whether any non-empty secret's HMAC of parts equals
// one of sigs, comparing in constant time. An empty secret never verifies:
// anyone could compute its MAC.
func anyKeySigned(h func() hash.Hash, secrets [][]byte, sigs [][]byte, parts ...[]byte) bool {
	for _, key := range secrets {
		if len(key) == 0 {
			continue
		}
		want := macSum(h, key, parts...)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return true
			}
		}
	}
	return false
}

// stringSetting returns a string setting, "" when absent.
func stringSetting(cfg Config, key string) (string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("config %s: want a string", key)
	}
	return s, nil
}

// boolSetting returns a boolean setting, false when absent.
func boolSetting(cfg Config, key string) (bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("config %s: want true or false", key)
	}
	return b, nil
}

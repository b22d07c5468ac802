package inbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxIDLength bounds the event id the inbox records (its key column).
const maxIDLength = 255

// secretKeys decodes Standard Webhooks secrets: base64 after "whsec_".
func secretKeys(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("inbox: at least one signing secret is required")
	}
	keys := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("inbox: secret %d is not whsec_<base64>", i+1)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// lateError is a delivery whose timestamp is outside the tolerance: a
// recorded delivery sent again later.
type lateError struct{ msg string }

func (e *lateError) Error() string { return e.msg }

// verify checks a delivery's Standard Webhooks headers against body and
// returns its id: the webhook-timestamp within the tolerance of now, and
// one of webhook-signature's "v1,<base64>" values the HMAC-SHA256 of
// "{id}.{timestamp}.{body}" under one of the secrets.
func (h *Handler) verify(hdr http.Header, body []byte) (string, error) {
	id, ts, sigs := hdr.Get("webhook-id"), hdr.Get("webhook-timestamp"), hdr.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return "", errors.New("webhook-id, webhook-timestamp and webhook-signature are required")
	}
	if len(id) > maxIDLength || !printable(id) {
		return "", fmt.Errorf("webhook-id must be at most %d printable ASCII characters", maxIDLength)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", errors.New("webhook-timestamp is not unix seconds")
	}
	now := h.now()
	at := time.Unix(unix, 0)
	switch {
	case now.Sub(at) > h.tolerance:
		return "", &lateError{fmt.Sprintf("webhook-timestamp is %s old, more than the %s tolerated", now.Sub(at).Truncate(time.Second), h.tolerance)}
	case at.Sub(now) > h.tolerance:
		return "", &lateError{fmt.Sprintf("webhook-timestamp is %s ahead, more than the %s tolerated", at.Sub(now).Truncate(time.Second), h.tolerance)}
	}
	for _, key := range h.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for _, sig := range strings.Fields(sigs) {
			version, value, _ := strings.Cut(sig, ",")
			if version != "v1" {
				continue // another scheme (v1a, asymmetric) this inbox does not hold keys for
			}
			got, err := base64.StdEncoding.DecodeString(value)
			if err == nil && hmac.Equal(got, want) {
				return id, nil
			}
		}
	}
	return "", errors.New("no webhook-signature matches under the secrets this inbox holds")
}

func printable(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Package bodyurl signs short-lived addresses that serve a message's raw
// body without an API key: for operators' tools, and for consumers of an
// event whose data was truncated.
package bodyurl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// TTL is how long a signed address works.
const TTL = 5 * time.Minute

// Signer makes and checks signed addresses under one key.
type Signer struct {
	Key       []byte
	PublicURL string // the base the addresses are served under
}

// URL returns the address of message id's body, valid until expires.
func (s Signer) URL(id string, expires time.Time) string {
	return strings.TrimRight(s.PublicURL, "/") + "/body/" + s.Sign(id, expires)
}

// Sign returns "<message id>.<expiry unix seconds>.<mac>".
func (s Signer) Sign(id string, expires time.Time) string {
	payload := id + "." + strconv.FormatInt(expires.Unix(), 10)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// Open checks a signed address and returns its message id while it is
// unexpired at now.
func (s Signer) Open(signed string, now time.Time) (string, bool) {
	i := strings.LastIndexByte(signed, '.')
	if i < 0 {
		return "", false
	}
	payload := signed[:i]
	mac, err := base64.RawURLEncoding.DecodeString(signed[i+1:])
	if err != nil || !hmac.Equal(mac, s.mac(payload)) {
		return "", false
	}
	id, exp, ok := strings.Cut(payload, ".")
	if !ok || !intake.ValidID(id) {
		return "", false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) {
		return "", false
	}
	return id, true
}

func (s Signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.Key)
	m.Write([]byte("intake body url v1\x00" + payload))
	return m.Sum(nil)
}

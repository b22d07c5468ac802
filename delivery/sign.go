// Package delivery sends events to consumers: the JSON envelope, Standard
// Webhooks signatures under the consumer's secret, an address policy checked
// at connect time, and the reading of the consumer's answer.
package delivery

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// NewSecret makes a consumer signing secret in the Standard Webhooks form
// ("whsec_" + base64 of 32 random bytes), so consumers can verify with any
// Standard Webhooks library.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// secretKey returns the HMAC key of a Standard Webhooks secret: the bytes
// base64-encoded after the "whsec_" prefix.
func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("consumer secret is not whsec_<base64>")
	}
	return key, nil
}

// Sign returns the webhook-signature header value for a message: "v1," and
// the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

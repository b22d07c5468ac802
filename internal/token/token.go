// Package token makes the random credentials intake hands out (endpoint
// tokens, API keys, staff tokens) and the hashes it stores in their place.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// New returns a URL-safe random token of 32 bytes (256 bits) with a prefix
// that says what it is (e.g. "ik_" for API keys).
func New(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// Hash is the SHA-256 stored in place of a token.
func Hash(t string) []byte {
	h := sha256.Sum256([]byte(t))
	return h[:]
}

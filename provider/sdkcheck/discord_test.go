package sdkcheck

import (
	"crypto/ed25519"
	"encoding/hex"
	"strconv"
	"testing"
	"time"
)

// discord-interactions (Discord's own) verifies (verifyKey, Ed25519 over the
// timestamp and the body, with the application's public key; it signs
// nothing, since only Discord holds the private key): intake's sample,
// signed with a test key pair, must verify with both, and its tamperings
// with neither. verifyKey judges no time; intake's tolerance is proven in
// provider's own tests.
func TestDiscordAgreesWithDiscordInteractions(t *testing.T) {
	now := time.Now()
	seed := hex.EncodeToString(make([]byte, ed25519.SeedSize))
	public := hex.EncodeToString(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	other := []byte("sdkcheck-another-ed25519-seed-32")
	good := sample(t, "discord", seed, now)
	sig := good.Header.Get("X-Signature-Ed25519")

	agreeNode(t, "discord", []string{public}, nil, []delivery{
		{"intake's sample", good, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-Signature-Ed25519", flipHex(sig)), false},
		{"timestamp moved by a second", withHeader(good, "X-Signature-Timestamp", strconv.FormatInt(now.Unix()+1, 10)), false},
		{"signed with another key", sample(t, "discord", hex.EncodeToString(other), now), false},
		{"no signature", withHeader(good, "X-Signature-Ed25519", ""), false},
	})
}

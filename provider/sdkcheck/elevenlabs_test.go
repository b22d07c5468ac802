package sdkcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

const elevenlabsSecret = "wsec_sdkcheck0elevenlabs0webhook0secret"

// @elevenlabs/elevenlabs-js verifies (webhooks.constructEvent): a v0
// HMAC-SHA256 over "<timestamp>.<body>", thirty minutes judged on the wall
// clock (so the deliveries are signed around now and received now), only
// the age.
func TestElevenLabsAgreesWithElevenLabsJS(t *testing.T) {
	now := time.Now()
	signedAt := func(at time.Time) *provider.Request {
		return receivedAt(sample(t, "elevenlabs", elevenlabsSecret, at), now)
	}
	good := signedAt(now)
	header := good.Header.Get("ElevenLabs-Signature")
	sig := header[strings.Index(header, "v0=")+3:]
	ts := strconv.FormatInt(now.Unix(), 10)

	agreeNode(t, "elevenlabs", []string{elevenlabsSecret}, nil, []delivery{
		{"signed now", good, true},
		{"signed twenty minutes before receipt", signedAt(now.Add(-20 * time.Minute)), true},
		{"signed forty minutes before receipt", signedAt(now.Add(-40 * time.Minute)), false},
		{"signed forty minutes after receipt", signedAt(now.Add(40 * time.Minute)), true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "ElevenLabs-Signature", "t="+ts+",v0="+flipHex(sig)), false},
		{"timestamp moved by a second", withHeader(good, "ElevenLabs-Signature", "t="+strconv.FormatInt(now.Unix()+1, 10)+",v0="+sig), false},
		{"signed with another secret", receivedAt(sample(t, "elevenlabs", "sdkcheck-another-secret", now), now), false},
		{"no signature", withHeader(good, "ElevenLabs-Signature", ""), false},
	})
}

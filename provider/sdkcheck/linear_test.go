package sdkcheck

import (
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
)

const linearSecret = "lin_wh_sdkcheck0linear0webhook0secret"

// @linear/sdk verifies (LinearWebhookClient.verify): HMAC-SHA256 in hex of
// the body, whose webhookTimestamp must be within a minute of the wall
// clock either way (so the deliveries are signed around now and received
// now).
func TestLinearAgreesWithLinearSDK(t *testing.T) {
	now := time.Now()
	signedAt := func(at time.Time) *provider.Request { return receivedAt(sample(t, "linear", linearSecret, at), now) }
	good := signedAt(now)
	sig := good.Header.Get("Linear-Signature")

	agreeNode(t, "linear", []string{linearSecret}, nil, []delivery{
		{"signed now", good, true},
		{"signed thirty seconds before receipt", signedAt(now.Add(-30 * time.Second)), true},
		{"signed two minutes before receipt", signedAt(now.Add(-2 * time.Minute)), false},
		{"signed two minutes after receipt", signedAt(now.Add(2 * time.Minute)), false},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "Linear-Signature", flipHex(sig)), false},
		{"signed with another secret", receivedAt(sample(t, "linear", "sdkcheck-another-secret", now), now), false},
		{"no signature", withHeader(good, "Linear-Signature", ""), false},
	})
}

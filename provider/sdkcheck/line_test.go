package sdkcheck

import (
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/line/line-bot-sdk-go/v8/linebot/webhook"
)

const lineChannelSecret = "sdkcheck0line0channel0secret0000"

// LINE's Messaging API SDK verifies (webhook.ParseRequest, which checks
// x-line-signature before it reads the events; it signs nothing): intake's
// sample must verify with both, and its tamperings with neither. LINE
// signs no time.
func TestLineAgreesWithLinesSDK(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "line", lineChannelSecret, now)
	sig := good.Header.Get("X-Line-Signature")

	agree(t, "line", []string{lineChannelSecret}, nil, func(r *provider.Request) bool {
		_, err := webhook.ParseRequest(lineChannelSecret, httpRequest(t, r))
		return err == nil
	}, []delivery{
		{"as signed", good, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one character", withHeader(good, "X-Line-Signature", flipBase64(sig)), false},
		{"signed with another channel secret", sample(t, "line", "sdkcheck0another0channel0secret0", now), false},
		{"no signature", withHeader(good, "X-Line-Signature", ""), false},
	})
}

package sdkcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	paddle "github.com/PaddleHQ/paddle-go-sdk/v4"
	"github.com/intakehq/intake/provider"
)

const paddleSecret = "pdl_ntfset_01sdkcheck0000000000000000_sdkcheck0paddle0secret0key00"

// paddle-go-sdk verifies (WebhookVerifier with its replay check set to the
// five seconds intake allows, judged on the wall clock, so the deliveries
// are signed around now and received now; it signs nothing): intake's
// sample must verify with both, and its tamperings with neither.
func TestPaddleAgreesWithPaddleGoSDK(t *testing.T) {
	now := time.Now()
	good := sample(t, "paddle", paddleSecret, now)
	header := good.Header.Get("Paddle-Signature")
	ts, h1, _ := strings.Cut(strings.TrimPrefix(header, "ts="), ";h1=")
	late := receivedAt(sample(t, "paddle", paddleSecret, now.Add(-time.Minute)), now)

	v := paddle.NewWebhookVerifier(paddleSecret, paddle.VerifierWithTimestampTolerance(5*time.Second))
	agree(t, "paddle", []string{paddleSecret}, nil, func(r *provider.Request) bool {
		ok, err := v.Verify(httpRequest(t, r))
		return ok && err == nil
	}, []delivery{
		{"signed now", good, true},
		{"signed a minute before receipt", late, false},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "Paddle-Signature", "ts="+ts+";h1="+flipHex(h1)), false},
		{"timestamp moved by a second", withHeader(good, "Paddle-Signature", "ts="+strconv.FormatInt(now.Unix()-1, 10)+";h1="+h1), false},
		{"signed with another secret", sample(t, "paddle", "pdl_ntfset_01sdkcheck_another0secret", now), false},
		{"no signature", withHeader(good, "Paddle-Signature", ""), false},
	})
}

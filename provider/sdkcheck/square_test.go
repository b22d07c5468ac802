package sdkcheck

import (
	"testing"
	"time"
)

const squareKey = "sdkcheck-square-signature-key"

// square (Square's Node.js SDK) verifies (WebhooksHelper.verifySignature):
// HMAC-SHA256 in base64 over the notification URL and the body. Square
// signs no time.
func TestSquareAgreesWithSquareNode(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "square", squareKey, now)
	sig := good.Header.Get("x-square-hmacsha256-signature")
	elsewhere := clone(good)
	elsewhere.URL = endpointURL + "?copy=1"

	agreeNode(t, "square", []string{squareKey}, nil, []delivery{
		{"intake's sample", good, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"posted to another URL", elsewhere, false},
		{"signature changed by one character", withHeader(good, "x-square-hmacsha256-signature", flipBase64(sig)), false},
		{"signed with another key", sample(t, "square", "sdkcheck-another-key", now), false},
		{"no signature", withHeader(good, "x-square-hmacsha256-signature", ""), false},
	})
}

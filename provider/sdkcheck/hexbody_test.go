package sdkcheck

import (
	"testing"
	"time"
)

// GoCardless, Onfido and Coinbase Commerce sign the raw body with
// HMAC-SHA256 in hex, and no time. Their Node.js SDKs only verify
// (gocardless-nodejs's webhooks.verifySignature, @onfido/api's
// WebhookEventVerifier, coinbase-commerce-node's Webhook.verifySigHeader):
// intake's sample must verify with both, and its tamperings with neither.
func TestHexBodySignaturesAgreeWithTheProvidersNodeSDKs(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	for _, p := range []struct{ code, header string }{
		{"gocardless", "Webhook-Signature"},
		{"onfido", "X-SHA2-Signature"},
		{"coinbase_commerce", "X-CC-Webhook-Signature"},
	} {
		t.Run(p.code, func(t *testing.T) {
			secret := "sdkcheck-" + p.code + "-webhook-secret"
			good := sample(t, p.code, secret, now)
			sig := good.Header.Get(p.header)
			agreeNode(t, p.code, []string{secret}, nil, []delivery{
				{"intake's sample", good, true},
				{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
				{"signature changed by one digit", withHeader(good, p.header, flipHex(sig)), false},
				{"signature cut short", withHeader(good, p.header, sig[:len(sig)-2]), false},
				{"signed with another secret", sample(t, p.code, "sdkcheck-another-secret", now), false},
				{"no signature", withHeader(good, p.header, ""), false},
			})
		})
	}
}

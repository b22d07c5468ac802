package sdkcheck

import (
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/razorpay/razorpay-go/utils"
)

const razorpaySecret = "sdkcheck-razorpay-webhook-secret"

// razorpay-go verifies (utils.VerifyWebhookSignature; it signs nothing):
// intake's sample must verify with both, and its tamperings with neither.
// Razorpay signs no time.
func TestRazorpayAgreesWithRazorpayGo(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "razorpay", razorpaySecret, now)
	sig := good.Header.Get("X-Razorpay-Signature")

	agree(t, "razorpay", []string{razorpaySecret}, nil, func(r *provider.Request) bool {
		return utils.VerifyWebhookSignature(string(r.Body), r.Header.Get("X-Razorpay-Signature"), razorpaySecret)
	}, []delivery{
		{"as signed", good, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-Razorpay-Signature", flipHex(sig)), false},
		{"signed with another secret", sample(t, "razorpay", "sdkcheck-another-secret", now), false},
		{"no signature", withHeader(good, "X-Razorpay-Signature", ""), false},
	})
}

package sdkcheck

import (
	"testing"
	"time"

	"github.com/PagerDuty/go-pagerduty/webhookv3"
	"github.com/intakehq/intake/provider"
)

const pagerdutySecret = "sdkcheck-pagerduty-v3-webhook-secret"

// go-pagerduty verifies V3 webhooks (webhookv3.VerifySignature; it signs
// nothing): intake's sample must verify with both, and its tamperings with
// neither. PagerDuty signs no time.
func TestPagerDutyAgreesWithGoPagerDuty(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "pagerduty", pagerdutySecret, now)
	sig := good.Header.Get("X-PagerDuty-Signature")
	other := sample(t, "pagerduty", "sdkcheck-another-secret", now)

	agree(t, "pagerduty", []string{pagerdutySecret}, nil, func(r *provider.Request) bool {
		return webhookv3.VerifySignature(httpRequest(t, r), pagerdutySecret) == nil
	}, []delivery{
		{"as signed", good, true},
		// While a secret rotates, PagerDuty sends a signature under each.
		{"beside a signature that does not match", withHeader(good, "X-PagerDuty-Signature", other.Header.Get("X-PagerDuty-Signature")+","+sig), true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-PagerDuty-Signature", flipHex(sig)), false},
		{"signature under another version", withHeader(good, "X-PagerDuty-Signature", "v2="+sig[len("v1="):]), false},
		{"signed with another secret", other, false},
		{"no signature", withHeader(good, "X-PagerDuty-Signature", ""), false},
	})
}

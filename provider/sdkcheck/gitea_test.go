package sdkcheck

import (
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/intakehq/intake/provider"
)

const giteaSecret = "sdkcheck-gitea-webhook-secret"

// Gitea's SDK verifies (VerifyWebhookSignature; it signs nothing): intake's
// sample, a JSON pull request event, must verify with both, and its
// tamperings with neither. Gitea signs no time.
func TestGiteaAgreesWithGiteasSDK(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "gitea", giteaSecret, now)
	sig := good.Header.Get("X-Gitea-Signature")

	agree(t, "gitea", []string{giteaSecret}, nil, func(r *provider.Request) bool {
		ok, err := gitea.VerifyWebhookSignature(giteaSecret, r.Header.Get("X-Gitea-Signature"), r.Body)
		return ok && err == nil
	}, []delivery{
		{"as signed", good, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-Gitea-Signature", flipHex(sig)), false},
		{"signed with another secret", sample(t, "gitea", "sdkcheck-another-secret", now), false},
		{"no signature", withHeader(good, "X-Gitea-Signature", ""), false},
	})
}

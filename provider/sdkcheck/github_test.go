package sdkcheck

import (
	"testing"
	"time"
)

const githubSecret = "sdkcheck-github-webhook-secret"

// @octokit/webhooks-methods (GitHub's own) signs (sign) and verifies
// (verify): what it signs must verify with intake, intake's sample with it,
// and their tamperings with neither. GitHub signs no time.
func TestGitHubAgreesWithOctokitWebhooksMethods(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "github", githubSecret, now)
	byOctokit := nodeSigned(t, "github", githubSecret, good.Body, now, now)
	sig := good.Header.Get("X-Hub-Signature-256")

	agreeNode(t, "github", []string{githubSecret}, nil, []delivery{
		{"intake's sample", good, true},
		{"signed by octokit", byOctokit, true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signed by octokit, body changed by one byte", withBody(byOctokit, oneByte(byOctokit.Body)), false},
		{"signature changed by one digit", withHeader(good, "X-Hub-Signature-256", flipHex(sig)), false},
		{"signed with another secret", sample(t, "github", "sdkcheck-another-secret", now), false},
		{"signature without its sha256= prefix", withHeader(good, "X-Hub-Signature-256", sig[len("sha256="):]), false},
		{"no signature", withHeader(good, "X-Hub-Signature-256", ""), false},
	})
	if byOctokit.Header.Get("X-Hub-Signature-256") != sig {
		t.Errorf("octokit signs %s, intake's sample carries %s", byOctokit.Header.Get("X-Hub-Signature-256"), sig)
	}
}

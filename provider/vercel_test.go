package provider

import (
	"crypto/sha1"
	"testing"
	"time"
)

// Vercel publishes no vector with its secret; these requests are signed
// with a known secret as its docs describe: x-vercel-signature is the hex
// HMAC-SHA1 of the body.
const (
	vercelSecret = "vercel-webhook-secret"
	vercelBody   = `{"id":"uev_1a2b3c","type":"deployment.succeeded","createdAt":1700000000456,"region":"iad1",` +
		`"payload":{"deployment":{"id":"dpl_89ab","url":"app-git-main.vercel.app"},"project":{"id":"prj_12cd"}}}`
)

func vercelRequest(sig string) *Request { return post(vercelBody, "x-vercel-signature", sig) }

func TestVercelVerifiesSignedDelivery(t *testing.T) {
	wantVerified(t, adapter(t, "vercel").Verify(vercelRequest(hexMAC(sha1.New, vercelSecret, vercelBody)), secrets("old", vercelSecret), nil))
}

func TestVercelRejects(t *testing.T) {
	sig := hexMAC(sha1.New, vercelSecret, vercelBody)
	tampered := vercelRequest(sig)
	tampered.Body = []byte(vercelBody + " ")
	wantAllRejected(t, "vercel", nil, []rejectCase{
		{"tampered body", tampered, secrets(vercelSecret)},
		{"wrong secret", vercelRequest(sig), secrets("other")},
		{"no secrets", vercelRequest(sig), nil},
		{"missing header", vercelRequest(""), secrets(vercelSecret)},
		{"sha256 signature", vercelRequest(sha256Hex(vercelSecret, vercelBody)), secrets(vercelSecret)},
	})
}

func TestVercelInterpretsDeploymentSucceeded(t *testing.T) {
	ev := oneEvent(t, adapter(t, "vercel"), vercelRequest(""), nil)
	if ev.Type != "vercel.deployment.succeeded" || ev.ProviderEventID != "uev_1a2b3c" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"dpl_89ab", "prj_12cd"}) || !ev.OccurredAt.Equal(time.UnixMilli(1700000000456)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
}

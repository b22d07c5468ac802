package sdkcheck

import (
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	svix "github.com/svix/svix-webhooks/go"
)

// base64 of "sdkcheck svix endpoint secret".
const svixSecret = "whsec_c2RrY2hlY2sgc3ZpeCBlbmRwb2ludCBzZWNyZXQ="

// svixSigner is Svix's own library's signer under secret.
func svixSigner(secret string) signer { return libSigner(svix.NewWebhook, secret) }

// Svix's Go library signs and verifies (Verify: five minutes either way on
// the wall clock). Clerk and Resend send through Svix, and their docs
// verify with this library, so their codes are held to it too.
func TestSvixCodesAgreeWithSvixsLibrary(t *testing.T) {
	wh, err := svix.NewWebhook(svixSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"svix", "clerk", "resend"} {
		t.Run(code, func(t *testing.T) {
			agree(t, code, []string{svixSecret}, nil, func(r *provider.Request) bool {
				return wh.Verify(r.Body, r.Header) == nil
			}, swDeliveries(t, "svix", time.Now(), svixSigner(svixSecret), svixSigner(olderSecret)))
		})
	}
}

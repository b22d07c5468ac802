package sdkcheck

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// base64 of "sdkcheck openai endpoint secret!"; OpenAI's SDKs want at
	// least 24 bytes.
	openaiSecret = "whsec_c2RrY2hlY2sgb3BlbmFpIGVuZHBvaW50IHNlY3JldCE="
	// A secret without whsec_, which OpenAI's SDKs use as written.
	openaiRawSecret = "sdkcheck-openai-raw-secret"
)

// openaiVerifier is openai-go's webhook verification under secret, judging
// the time against now with its default five minutes.
func openaiVerifier(secret string, now time.Time) func(*provider.Request) bool {
	svc := webhooks.NewWebhookService(option.WithWebhookSecret(secret))
	return func(r *provider.Request) bool {
		return svc.VerifySignatureWithToleranceAndTime(r.Body, r.Header, 5*time.Minute, now) == nil
	}
}

// rawSigner signs as the Standard Webhooks library does with key as the
// HMAC key itself.
func rawSigner(key string) signer { return libSigner(standardwebhooks.NewWebhookRaw, []byte(key)) }

// openai-go verifies (it signs nothing); the Standard Webhooks library signs,
// as OpenAI's webhooks are Standard Webhooks. openai-go takes the time to
// judge against, so these deliveries are received at a fixed time.
func TestOpenAIAgreesWithOpenAIGo(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	ds := swDeliveries(t, "webhook", now, standardSigner(openaiSecret), standardSigner(olderSecret))
	// Both OpenAI SDKs read a signature without its "v1," as v1.
	good := standardSigner(openaiSecret)(t, swID, now, swBody)
	bare := received([]byte(swBody), http.Header{
		"Webhook-Id": {swID}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
		"Webhook-Signature": {strings.TrimPrefix(good, "v1,")}}, now)
	ds = append(ds,
		delivery{"signature without its version", bare, true},
		delivery{"signature without its version, body changed by one byte", withBody(bare, oneByte(bare.Body)), false})
	agree(t, "openai", []string{openaiSecret}, nil, openaiVerifier(openaiSecret, now), ds)
}

// A secret without whsec_ keys the HMAC with its own bytes, in openai-go
// as in intake.
func TestOpenAIAgreesWithOpenAIGoOnASecretWithoutPrefix(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	ds := swDeliveries(t, "webhook", now, rawSigner(openaiRawSecret), rawSigner("sdkcheck-another-raw-secret"))
	agree(t, "openai", []string{openaiRawSecret}, nil, openaiVerifier(openaiRawSecret, now), ds)
}

package sdkcheck

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/stripe/stripe-go/v82/webhook"
)

const (
	stripeSecret = "whsec_sdkcheck0Stripe0EndpointSecret"
	stripeBody   = `{"id":"evt_1QsdkCheck0001","object":"event","api_version":"2025-03-31.basil","created":1741944413,` +
		`"type":"invoice.paid","livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},` +
		`"data":{"object":{"id":"in_1QsdkCheck0001","object":"invoice","status":"paid","amount_paid":2000}}}`
)

// stripeHeader is the Stripe-Signature stripe-go's test signer writes for
// stripeBody under secret at signedAt; scheme "" is v1.
func stripeHeader(secret, scheme string, signedAt time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: []byte(stripeBody), Secret: secret, Timestamp: signedAt, Scheme: scheme}).Header
}

// stripe-go signs (GenerateTestSignedPayload) and verifies (ValidatePayload,
// with its default five-minute tolerance judged on the wall clock, so the
// deliveries are signed around now and received now).
func TestStripeAgreesWithStripeGo(t *testing.T) {
	now := time.Now()
	at := func(header string) *provider.Request {
		return received([]byte(stripeBody), http.Header{"Stripe-Signature": {header}}, now)
	}
	good := stripeHeader(stripeSecret, "", now)
	sig := good[strings.Index(good, "v1=")+3:]
	ts := strconv.FormatInt(now.Unix(), 10)
	oldSecret := stripeHeader("whsec_the0old0secret", "", now)

	agree(t, "stripe", []string{stripeSecret}, nil, func(r *provider.Request) bool {
		return webhook.ValidatePayload(r.Body, r.Header.Get("Stripe-Signature"), stripeSecret) == nil
	}, []delivery{
		{"signed now", at(good), true},
		{"signed four minutes before receipt", at(stripeHeader(stripeSecret, "", now.Add(-4*time.Minute))), true},
		{"signed ten minutes before receipt", at(stripeHeader(stripeSecret, "", now.Add(-10*time.Minute))), false},
		// Only the age is judged: a time ahead is the receiver's clock.
		{"signed ten minutes after receipt", at(stripeHeader(stripeSecret, "", now.Add(10*time.Minute))), true},
		{"while the secret rolls, old and new signatures", at(oldSecret + ",v1=" + sig), true},
		{"body changed by one byte", withBody(at(good), oneByte([]byte(stripeBody))), false},
		{"signature changed by one digit", at("t=" + ts + ",v1=" + flipHex(sig)), false},
		{"timestamp moved by a second", at("t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + sig), false},
		{"signed with another secret", at(oldSecret), false},
		{"only a v0 signature", at(stripeHeader(stripeSecret, "v0", now)), false},
		{"no Stripe-Signature", withHeader(at(good), "Stripe-Signature", ""), false},
	})
}

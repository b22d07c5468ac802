package sdkcheck

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/mailgun/mailgun-go/v4"
)

const mailgunSigningKey = "sdkcheck-mailgun-webhook-signing-key"

// mailgun-go verifies (VerifyWebhookSignature, on the body's signature
// object as its WebhookPayload reads it; it signs nothing): intake's
// sample must verify with both, and its tamperings with neither. Mailgun
// signs the timestamp and token only, and judges no time by default.
func TestMailgunAgreesWithMailgunGo(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "mailgun", mailgunSigningKey, now)
	var p mailgun.WebhookPayload
	if err := json.Unmarshal(good.Body, &p); err != nil {
		t.Fatal(err)
	}
	body := string(good.Body)
	changed := func(old, new string) *provider.Request {
		return withBody(good, []byte(replaceOnce(t, body, old, new)))
	}

	mg := mailgun.NewMailgun("mg.example.com", "sdkcheck-api-key")
	mg.SetWebhookSigningKey(mailgunSigningKey)
	agree(t, "mailgun", []string{mailgunSigningKey}, nil, func(r *provider.Request) bool {
		var p mailgun.WebhookPayload
		if json.Unmarshal(r.Body, &p) != nil {
			return false
		}
		ok, err := mg.VerifyWebhookSignature(p.Signature)
		return ok && err == nil
	}, []delivery{
		{"as signed", good, true},
		{"received a day after it was signed", receivedAt(good, now.Add(24*time.Hour)), true},
		// What Mailgun's signature does not cover: each event's id stops
		// a replay of it.
		{"event data changed", changed(`"recipient":"someone@example.com"`, `"recipient":"someone@example.org"`), true},
		{"token changed by one character", changed(p.Signature.Token, flipHex(p.Signature.Token)), false},
		{"timestamp moved by a second", changed(`"timestamp":"`+p.Signature.TimeStamp+`"`, `"timestamp":"`+strconv.FormatInt(now.Unix()+1, 10)+`"`), false},
		{"signature changed by one digit", changed(p.Signature.Signature, flipHex(p.Signature.Signature)), false},
		{"signed with another key", sample(t, "mailgun", "sdkcheck-another-signing-key", now), false},
	})
}

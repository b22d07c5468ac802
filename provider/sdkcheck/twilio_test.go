package sdkcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/twilio/twilio-go/client"
)

const twilioAuthToken = "sdkcheck0twilio0auth0token000000"

// twilio-go verifies (RequestValidator.ValidateBody, for POSTs; it signs
// nothing): intake's sample, an SMS status callback form signed over the
// endpoint URL and the sorted parameters, must verify with both, and its
// tamperings with neither. Twilio signs no time.
func TestTwilioAgreesWithTwilioGo(t *testing.T) {
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "twilio", twilioAuthToken, now)
	sig := good.Header.Get("X-Twilio-Signature")
	atURL := func(u string) *provider.Request {
		r := clone(good)
		r.URL = u
		return r
	}

	v := client.NewRequestValidator(twilioAuthToken)
	agree(t, "twilio", []string{twilioAuthToken}, nil, func(r *provider.Request) bool {
		return v.ValidateBody(r.URL, r.Body, r.Header.Get("X-Twilio-Signature"))
	}, []delivery{
		{"as signed", good, true},
		// Twilio signs the URL with or without the default port; both
		// verifiers try both.
		{"URL with its default port", atURL(strings.Replace(endpointURL, "example.com/", "example.com:443/", 1)), true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"a parameter added", withBody(good, append(good.Body, "&Price=-0.0075"...)), false},
		{"signature changed by one character", withHeader(good, "X-Twilio-Signature", flipBase64(sig)), false},
		{"URL of another endpoint", atURL(endpointURL + "x"), false},
		{"signed with another auth token", sample(t, "twilio", "sdkcheck0another0auth0token00000", now), false},
		{"no signature", withHeader(good, "X-Twilio-Signature", ""), false},
	})
}

package sdkcheck

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// base64 of "sdkcheck standard webhooks key" and of "sdkcheck an older svix secret".
	standardSecret = "whsec_c2RrY2hlY2sgc3RhbmRhcmQgd2ViaG9va3Mga2V5"
	olderSecret    = "whsec_c2RrY2hlY2sgYW4gb2xkZXIgc3ZpeCBzZWNyZXQ="

	swID   = "msg_2sdkcheckStandard0001"
	swBody = `{"type":"invoice.paid","timestamp":"2025-03-14T09:26:53Z","data":{"id":"inv_sdkcheck0001","amount":2000}}`
)

// signer signs a Standard Webhooks message: "v1,<base64>" (or the SDK's
// own form) over id, the time in unix seconds and body.
type signer func(t testing.TB, id string, at time.Time, body string) string

// libSigner is the signer of a library's webhook that open makes from key:
// each of these libraries signs as Sign(id, at, body).
func libSigner[W interface {
	Sign(string, time.Time, []byte) (string, error)
}, K any](open func(K) (W, error), key K) signer {
	return func(t testing.TB, id string, at time.Time, body string) string {
		t.Helper()
		wh, err := open(key)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
}

// standardSigner is the Standard Webhooks library's signer under secret.
func standardSigner(secret string) signer { return libSigner(standardwebhooks.NewWebhook, secret) }

// swDeliveries are what every Standard-Webhooks-shaped scheme is judged
// on, under headers <prefix>-id, -timestamp and -signature, received at
// now: sign signs with the connection's secret, other with another one.
// The time may sit five minutes either way of receipt.
func swDeliveries(t *testing.T, prefix string, now time.Time, sign, other signer) []delivery {
	at := func(id string, ts time.Time, sig, body string) *provider.Request {
		h := http.Header{}
		h.Set(prefix+"-id", id)
		h.Set(prefix+"-timestamp", strconv.FormatInt(ts.Unix(), 10))
		h.Set(prefix+"-signature", sig)
		return received([]byte(body), h, now)
	}
	signed := func(ts time.Time) *provider.Request { return at(swID, ts, sign(t, swID, ts, swBody), swBody) }
	good := sign(t, swID, now, swBody)
	version, b64, _ := strings.Cut(good, ",")
	return []delivery{
		{"signed now", signed(now), true},
		{"signed four minutes before receipt", signed(now.Add(-4 * time.Minute)), true},
		{"signed four minutes after receipt", signed(now.Add(4 * time.Minute)), true},
		{"signed ten minutes before receipt", signed(now.Add(-10 * time.Minute)), false},
		{"signed ten minutes after receipt", signed(now.Add(10 * time.Minute)), false},
		{"while the secret rotates, old and new signatures", at(swID, now, other(t, swID, now, swBody)+" "+good, swBody), true},
		{"body changed by one byte", at(swID, now, good, string(oneByte([]byte(swBody)))), false},
		{"signature changed by one character", at(swID, now, version+","+flipBase64(b64), swBody), false},
		{"message id changed", at(swID+"x", now, good, swBody), false},
		{"timestamp moved by a second", at(swID, now.Add(time.Second), good, swBody), false},
		{"signed with another secret", at(swID, now, other(t, swID, now, swBody), swBody), false},
		{"signature under an unknown version", at(swID, now, "v2,"+b64, swBody), false},
		{"no message id", withHeader(signed(now), prefix+"-id", ""), false},
	}
}

// The Standard Webhooks library (libraries/go, the spec's own) signs and
// verifies (Verify: five minutes either way on the wall clock).
func TestStandardAgreesWithTheStandardWebhooksLibrary(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook(standardSecret)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, "standard", []string{standardSecret}, nil, func(r *provider.Request) bool {
		return wh.Verify(r.Body, r.Header) == nil
	}, swDeliveries(t, "webhook", time.Now(), standardSigner(standardSecret), standardSigner(olderSecret)))
}

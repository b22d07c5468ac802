package provider

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Coinbase Commerce's SDK vector, from coinbase/coinbase-commerce-node,
// test/testWebhook.spec.js: payload, secret and hex signature reproduce
// exactly, and its invalid secret is refused.
const (
	ccSDKSecret  = "30291a20-0bd1-4267-9b0f-e6e7b123c0bf"
	ccSDKInvalid = "30291a20-0bd1-4267-9b0f-e6e7b123c0bg"
	ccSDKBody    = `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","data":{"code":"66BEOV2A","name":"The Sovereign Individual","description":"Mastering the Transition to the Information Age","hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"metadata":{},"pricing_type":"no_price","payments":[],"addresses":{"bitcoin":"0000000000000000000000000000000000","ethereum":"0x0000000000000000000000000000000000000000","litecoin":"3000000000000000000000000000000000","bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}`
	ccSDKSig     = "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d"
)

func ccRequest(sig, body string) *Request { return post(body, "X-CC-Webhook-Signature", sig) }

func TestCoinbaseCommerceVerifiesSDKVector(t *testing.T) {
	wantVerified(t, adapter(t, "coinbase_commerce").Verify(ccRequest(ccSDKSig, ccSDKBody), secrets(ccSDKSecret), nil))
}

func TestCoinbaseCommerceAcceptsRotatedSecrets(t *testing.T) {
	wantVerified(t, adapter(t, "coinbase_commerce").Verify(ccRequest(ccSDKSig, ccSDKBody), secrets(ccSDKInvalid, ccSDKSecret), nil))
}

func TestCoinbaseCommerceRejects(t *testing.T) {
	wantAllRejected(t, "coinbase_commerce", nil, []rejectCase{
		// The SDK's own negative case.
		{"invalid secret (SDK case)", ccRequest(ccSDKSig, ccSDKBody), secrets(ccSDKInvalid)},
		{"tampered body", ccRequest(ccSDKSig, strings.Replace(ccSDKBody, "charge:created", "charge:confirmed", 1)), secrets(ccSDKSecret)},
		{"re-attempt number changed", ccRequest(ccSDKSig, strings.Replace(ccSDKBody, `"attempt_number":1`, `"attempt_number":2`, 1)), secrets(ccSDKSecret)},
		{"no secrets", ccRequest(ccSDKSig, ccSDKBody), nil},
		{"empty secret", ccRequest(sha256Hex("", ccSDKBody), ccSDKBody), secrets("")},
		{"missing header", ccRequest("", ccSDKBody), secrets(ccSDKSecret)},
		{"base64 instead of hex", ccRequest(b64MAC(sha256.New, ccSDKSecret, ccSDKBody), ccSDKBody), secrets(ccSDKSecret)},
	})
}

func TestCoinbaseCommerceInterpretsSDKEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "coinbase_commerce"), ccRequest("", ccSDKBody), nil)
	if ev.ProviderEventID != "24934862-d980-46cb-9402-43c81b0cdba6" || ev.Type != "coinbase_commerce.charge.created" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2017, 1, 31, 20, 49, 2, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if !equalStrings(ev.ObjectIDs, []string{"66BEOV2A"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	want := ccSDKBody[strings.Index(ccSDKBody, `{"id":"2493`) : len(ccSDKBody)-1]
	if string(ev.Data) != want {
		t.Errorf("Data = %s\nwant the event object %s", ev.Data, want)
	}
}

func TestCoinbaseCommerceNamesChargeByIDAndCode(t *testing.T) {
	// The example of https://docs.cdp.coinbase.com/commerce/api-arcitecture/webhooks-fields.
	body := `{"attempt_number":1,"event":{"api_version":"2018-03-22","created_at":"2023-08-30T19:29:20Z",` +
		`"data":{"id":"2aee9dd1-67b8-43ef-8dfe-977959850f27","code":"XA6G6ZFR","pricing":{"local":{"amount":"1.00","currency":"USD"}}},` +
		`"id":"7a4a2fc0-4ad4-4b11-8a3b-1e4ec1bc1a3b","resource":"event","type":"charge:confirmed"},` +
		`"id":"e5b7c6a0-4e6e-4b3e-8d6f-1b0d2b6a9f71","scheduled_for":"2023-08-30T19:29:20Z"}`
	ev := oneEvent(t, adapter(t, "coinbase_commerce"), ccRequest("", body), nil)
	if ev.Type != "coinbase_commerce.charge.confirmed" || ev.ProviderEventID != "7a4a2fc0-4ad4-4b11-8a3b-1e4ec1bc1a3b" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"2aee9dd1-67b8-43ef-8dfe-977959850f27", "XA6G6ZFR"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}

func TestCoinbaseCommerceRejectsUninterpretableBodiesPermanently(t *testing.T) {
	// The SDK refuses a body without an event, as here.
	for _, body := range []string{"Not json", `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1}`, `{"event":{"type":7}}`, "[]"} {
		_, err := adapter(t, "coinbase_commerce").Interpret(ccRequest("", body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Flutterwave publishes no secret/payload/signature triple. The v4 body
// follows https://developer.flutterwave.com/docs/webhooks (a charge.completed
// with webhook_id, timestamp, type and data) and its signature was computed
// outside Go (Python's hmac): base64 of the HMAC-SHA256 of the body under the
// secret hash. The v3 body is the charge.completed example of
// https://developer.flutterwave.com/v3.0/docs/webhooks, whose verif-hash is
// the secret hash itself; Flutterwave/Woocommerce-v2's
// tests/PHPUnit/test-flw-wc-payment-gateway.php sends it so (VERIF-HASH).
const (
	flwSecretHash = "flw-secret-hash-5d1c"
	flwV4Body     = `{"webhook_id":"wbk_0dIpW5zbmq0yGpXEP3dG","timestamp":1739456557968,"type":"charge.completed","data":{"id":"chg_e1f3a2b1-93f0-4a51-aa57-1d80c5e4c001",` +
		`"amount":25000,"currency":"NGN","status":"succeeded","reference":"order_2026_05_24_001","customer":{"id":"cus_4fa9c2b5-1a82-4b6e-9c5b-2c1f7d8e9a01",` +
		`"email":"ada.lovelace@example.com"},"payment_method":{"type":"mobile_money","mobile_money":{"network":"MTN","country_code":"234"}},` +
		`"created_datetime":"2025-02-13T14:22:37.001Z"}}`
	flwV4Signature = "kv2yi+WkxL0tsoaCH5aULczDedHHUZqfeJYVUdR6/Vk="
	flwV3Body      = `{"event":"charge.completed","data":{"id":285959875,"tx_ref":"Links-616626414629","flw_ref":"PeterEkene/FLW270177170",` +
		`"device_fingerprint":"a42937f4a73ce8bb8b8df14e63a2df31","amount":100,"currency":"NGN","charged_amount":100,"app_fee":1.4,"merchant_fee":0,` +
		`"processor_response":"Approved by Financial Institution","auth_model":"PIN","ip":"197.210.64.96","narration":"CARD Transaction ",` +
		`"status":"successful","payment_type":"card","created_at":"2020-07-06T19:17:04.000Z","account_id":17321,"customer":{"id":215604089,` +
		`"name":"Yemi Desola","phone_number":null,"email":"user@gmail.com","created_at":"2020-07-06T19:17:04.000Z"}},"event.type":"CARD_TRANSACTION"}`
)

func flwV4Request(sig, body string) *Request  { return post(body, "flutterwave-signature", sig) }
func flwV3Request(hash, body string) *Request { return post(body, "verif-hash", hash) }

func TestFlutterwaveVerifiesBothSchemes(t *testing.T) {
	a := adapter(t, "flutterwave")
	wantVerified(t, a.Verify(flwV4Request(flwV4Signature, flwV4Body), secrets(flwSecretHash), nil))
	wantVerified(t, a.Verify(flwV3Request(flwSecretHash, flwV3Body), secrets(flwSecretHash), nil))
}

func TestFlutterwaveAcceptsRotatedSecretHashes(t *testing.T) {
	a := adapter(t, "flutterwave")
	both := secrets("flw-new-secret-hash", flwSecretHash)
	wantVerified(t, a.Verify(flwV4Request(flwV4Signature, flwV4Body), both, nil))
	wantVerified(t, a.Verify(flwV3Request(flwSecretHash, flwV3Body), both, nil))
	wantVerified(t, a.Verify(flwV4Request(strings.TrimRight(flwV4Signature, "="), flwV4Body), both, nil))
}

func TestFlutterwaveRejects(t *testing.T) {
	forged := flwV4Request("AAAA", flwV4Body)
	forged.Header.Set("verif-hash", flwSecretHash)
	wantAllRejected(t, "flutterwave", nil, []rejectCase{
		{"tampered body", flwV4Request(flwV4Signature, strings.Replace(flwV4Body, `"amount":25000`, `"amount":2`, 1)), secrets(flwSecretHash)},
		{"wrong secret hash", flwV4Request(flwV4Signature, flwV4Body), secrets("flw-other")},
		{"no secrets", flwV4Request(flwV4Signature, flwV4Body), nil},
		{"empty secret", flwV4Request(b64MAC(sha256.New, "", flwV4Body), flwV4Body), secrets("")},
		{"hex instead of base64", flwV4Request(sha256Hex(flwSecretHash, flwV4Body), flwV4Body), secrets(flwSecretHash)},
		{"secret hash as the v4 signature", flwV4Request(flwSecretHash, flwV4Body), secrets(flwSecretHash)},
		{"wrong verif-hash", flwV3Request("flw-other", flwV3Body), secrets(flwSecretHash)},
		{"verif-hash prefix of the secret", flwV3Request(flwSecretHash[:8], flwV3Body), secrets(flwSecretHash)},
		{"verif-hash without secrets", flwV3Request(flwSecretHash, flwV3Body), nil},
		{"no headers", post(flwV3Body), secrets(flwSecretHash)},
		// A bad signature is not rescued by a verif-hash beside it.
		{"bad signature beside a good verif-hash", forged, secrets(flwSecretHash)},
	})
}

func TestFlutterwaveHidesVerifHash(t *testing.T) {
	ch, ok := adapter(t, "flutterwave").(CredentialHeaderer)
	if !ok || !equalStrings(ch.CredentialHeaders(nil), []string{"verif-hash"}) {
		t.Fatal("verif-hash, which carries the secret hash itself, is not a credential header")
	}
	got := CredentialHeaders(intake.Connection{Provider: "flutterwave", Config: json.RawMessage(`{}`)})
	if !equalStrings(got, []string{"verif-hash"}) {
		t.Errorf("CredentialHeaders = %v", got)
	}
}

func TestFlutterwaveInterpretsV4Charge(t *testing.T) {
	ev := oneEvent(t, adapter(t, "flutterwave"), flwV4Request("", flwV4Body), nil)
	if ev.Type != "flutterwave.charge.completed" || ev.Kind != intake.KindEvent ||
		ev.ProviderEventID != "charge.completed:chg_e1f3a2b1-93f0-4a51-aa57-1d80c5e4c001:succeeded" {
		t.Fatalf("got type %q kind %q id %q", ev.Type, ev.Kind, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"order_2026_05_24_001", "chg_e1f3a2b1-93f0-4a51-aa57-1d80c5e4c001"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.UnixMilli(1739456557968)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != flwV4Body {
		t.Errorf("Data = %s, want the body", ev.Data)
	}
}

func TestFlutterwaveInterpretsV3Charge(t *testing.T) {
	ev := oneEvent(t, adapter(t, "flutterwave"), flwV3Request("", flwV3Body), nil)
	if ev.Type != "flutterwave.charge.completed" || ev.ProviderEventID != "charge.completed:285959875:successful" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"Links-616626414629", "285959875", "PeterEkene/FLW270177170"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2020, 7, 6, 19, 17, 4, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

func TestFlutterwaveTellsOutcomesOfOneChargeApart(t *testing.T) {
	failed := oneEvent(t, adapter(t, "flutterwave"), flwV3Request("", strings.Replace(flwV3Body, `"status":"successful"`, `"status":"failed"`, 1)), nil)
	ok := oneEvent(t, adapter(t, "flutterwave"), flwV3Request("", flwV3Body), nil)
	if failed.ProviderEventID == ok.ProviderEventID {
		t.Fatalf("both named %q", ok.ProviderEventID)
	}
}

func TestFlutterwaveRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"data":{"id":1}}`, `{"event":1}`, "[]"} {
		_, err := adapter(t, "flutterwave").Interpret(flwV3Request("", body), nil)
		wantPermanent(t, err)
	}
}

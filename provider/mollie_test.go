package provider

import (
	"net/http"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Mollie's SDK vectors, from mollie/mollie-api-php: the payloads and
// secrets of tests/Webhooks/SignatureValidatorTest.php and
// tests/Webhooks/WebhookSignatureVerifierTest.php. Those tests compute
// their signatures at run time (hash_hmac('sha256', payload, secret)); the
// hex values here were computed the same way outside Go (Python's hmac).
const (
	mollieSDKPayload   = `{"id":"tr_12345","event_type":"payment-link.paid"}`
	mollieSDKSecret    = "test_webhook_secret"
	mollieSDKAlternate = "alternate_webhook_secret"
	mollieSDKSig       = "e479a5e4aaa17db94cfc546071e10e91c0b37f21e464e751ebdd7d7ad2ffd146"
	mollieSDKAltSig    = "d9a3b662172fdc140ac73ce937f49edcb72552dfbb8dfeb1696118a2c18386ef"

	mollieVerifierPayload = `{"id":"evt_test","type":"payment-link.paid","entityId":"pl_test","createdAt":"2024-01-01T00:00:00+00:00"}`
	mollieVerifierSecret  = "webhook_secret"
	mollieVerifierSig     = "77ffed7a0a427c09a20254c84c607ca1477a544e9bbc77c7eabc97f7b3574fe0"
)

// mollieFullEvent is the SDK's fixture tests/Fixtures/Webhooks/payloads/payment-link-paid.full.json, compacted.
const mollieFullEvent = `{"resource":"event","id":"event_GvJ8WHrp5isUdRub9CJyH","type":"payment-link.paid","entityId":"pl_qng5gbbv8NAZ5gpM5ZYgx",` +
	`"createdAt":"2024-12-16T15:57:04.0Z","_embedded":{"payment-link":{"resource":"payment-link","id":"pl_qng5gbbv8NAZ5gpM5ZYgx",` +
	`"profileId":"pfl_D96wnsu869","mode":"live","description":"Bicycle tires","amount":{"currency":"EUR","value":"24.95"},"archived":false,` +
	`"redirectUrl":"https://webshop.example.org/thanks","createdAt":"2021-03-20T09:29:56.0Z","expiresAt":"2023-06-06T11:00:00.0Z","reusable":true,` +
	`"_links":{"self":{"href":"/v2/payment-links/pl_qng5gbbv8NAZ5gpM5ZYgx","type":"application/hal+json"}}}},` +
	`"_links":{"self":{"href":"https://api.mollie.com/v2/events/event_GvJ8WHrp5isUdRub9CJyH","type":"application/hal+json"},` +
	`"documentation":{"href":"https://docs.mollie.com/guides/webhooks","type":"text/html"}}}`

func mollieRequest(body string, sigs ...string) *Request {
	r := post(body)
	for _, s := range sigs {
		r.Header.Add("X-Mollie-Signature", s)
	}
	return r
}

func TestMollieVerifiesSDKVectors(t *testing.T) {
	a := adapter(t, "mollie")
	// verifies_valid_signature, and the same signature with its prefix.
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, mollieSDKSig), secrets(mollieSDKSecret), nil))
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, "sha256="+mollieSDKSig), secrets(mollieSDKSecret), nil))
	// WebhookSignatureVerifierTest's payload, with and without the prefix.
	wantVerified(t, a.Verify(mollieRequest(mollieVerifierPayload, mollieVerifierSig), secrets(mollieVerifierSecret), nil))
	wantVerified(t, a.Verify(mollieRequest(mollieVerifierPayload, "sha256="+mollieVerifierSig), secrets(mollieVerifierSecret), nil))
}

func TestMollieAcceptsRotatedSecretsAndSignatures(t *testing.T) {
	a := adapter(t, "mollie")
	// verifies_valid_signature_from_multiple_secrets
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, mollieSDKSig), secrets("invalid_secret", mollieSDKSecret, "another_invalid_secret"), nil))
	// accepts_any_valid_signature_during_migration
	both := secrets(mollieSDKSecret, mollieSDKAlternate)
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, mollieSDKSig), both, nil))
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, mollieSDKAltSig), both, nil))
	// verifies_valid_signature_from_different_header_formats: several
	// signatures, one valid, as repeated headers or one list.
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, "invalid_signature", mollieSDKSig, "another_invalid_signature"), secrets(mollieSDKSecret), nil))
	wantVerified(t, a.Verify(mollieRequest(mollieSDKPayload, "sha256="+mollieSDKAltSig+", sha256="+mollieSDKSig), secrets(mollieSDKSecret), nil))
}

func TestMollieRejects(t *testing.T) {
	classicOn := Config{"classic": true}
	wantAllRejected(t, "mollie", nil, []rejectCase{
		// throws_exception_for_invalid_signature
		{"invalid signature (SDK case)", mollieRequest(mollieSDKPayload, "invalid_signature"), secrets(mollieSDKSecret)},
		// tampered_payload_returns_false, wrong_secret_returns_false
		{"tampered payload (SDK case)", mollieRequest(mollieVerifierPayload+" ", mollieVerifierSig), secrets(mollieVerifierSecret)},
		{"wrong secret (SDK case)", mollieRequest(mollieVerifierPayload, mollieVerifierSig), secrets("wrong_secret")},
		{"no secrets", mollieRequest(mollieSDKPayload, mollieSDKSig), nil},
		{"empty secret", mollieRequest(mollieSDKPayload, sha256Hex("", mollieSDKPayload)), secrets("")},
		// The SDK calls an unsigned request a legacy webhook; without
		// classic: true it proves nothing.
		{"unsigned", mollieRequest(mollieSDKPayload), secrets(mollieSDKSecret)},
		{"unsigned classic id", mollieRequest("id=tr_d0b0E3EA3v"), secrets(mollieSDKSecret)},
	})
	// With classic on, an unsigned body must still be an id and nothing else.
	wantAllRejected(t, "mollie", classicOn, []rejectCase{
		{"unsigned event", mollieRequest(mollieSDKPayload), secrets(mollieSDKSecret)},
		{"id with more fields", mollieRequest("id=tr_d0b0E3EA3v&status=paid"), secrets(mollieSDKSecret)},
		{"two ids", mollieRequest("id=tr_1&id=tr_2"), secrets(mollieSDKSecret)},
		{"not a Mollie id", mollieRequest("id=%3Cscript%3E"), secrets(mollieSDKSecret)},
		{"signed with the wrong secret", mollieRequest("id=tr_d0b0E3EA3v", sha256Hex("other", "id=tr_d0b0E3EA3v")), secrets(mollieSDKSecret)},
	})
}

func TestMollieAcceptsClassicWebhookOnlyWhenConfigured(t *testing.T) {
	a := adapter(t, "mollie")
	r := mollieRequest("id=tr_d0b0E3EA3v")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	wantRejected(t, a.Verify(r, secrets(mollieSDKSecret), nil))
	wantVerified(t, a.Verify(r, secrets(mollieSDKSecret), Config{"classic": true}))
	in, err := a.Interpret(r, Config{"classic": true})
	if err != nil || len(in.Events) != 1 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	ev := in.Events[0]
	if ev.Type != "mollie.payment.changed" || ev.Kind != intake.KindChangeNotice || ev.ProviderEventID != "" ||
		!equalStrings(ev.ObjectIDs, []string{"tr_d0b0E3EA3v"}) || string(ev.Data) != `{"id":"tr_d0b0E3EA3v"}` {
		t.Fatalf("event = %+v (data %s)", ev, ev.Data)
	}
	if err := a.ValidateConfig(Config{"classic": "yes"}); err == nil {
		t.Error("classic: \"yes\" was accepted")
	}
}

func TestMollieInterpretsSDKFullPayload(t *testing.T) {
	ev := oneEvent(t, adapter(t, "mollie"), mollieRequest(mollieFullEvent), nil)
	if ev.ProviderEventID != "event_GvJ8WHrp5isUdRub9CJyH" || ev.Type != "mollie.payment-link.paid" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"pl_qng5gbbv8NAZ5gpM5ZYgx"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2024, 12, 16, 15, 57, 4, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != mollieFullEvent {
		t.Errorf("Data = %s, want the event", ev.Data)
	}
}

func TestMollieReadsEmbeddedEntitiesInOrder(t *testing.T) {
	body := `{"resource":"event","id":"event_1","type":"sales-invoice.paid","entityId":"invoice_1",` +
		`"_embedded":{"z":{"id":"z_2"},"entity":{"id":"invoice_1"},"a":{"id":"a_3"}}}`
	for range 5 {
		ev := oneEvent(t, adapter(t, "mollie"), mollieRequest(body), nil)
		if !equalStrings(ev.ObjectIDs, []string{"invoice_1", "a_3", "z_2"}) {
			t.Fatalf("ObjectIDs = %v", ev.ObjectIDs)
		}
	}
}

func TestMollieRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"id":"event_1"}`, `{"type":1}`, "[]", "id=tr_1&x=2"} {
		_, err := adapter(t, "mollie").Interpret(&Request{Method: "POST", Header: http.Header{}, Body: []byte(body)}, nil)
		wantPermanent(t, err)
	}
}

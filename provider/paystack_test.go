package provider

import (
	"crypto/sha256"
	"crypto/sha512"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Paystack publishes no secret/payload/signature triple. The body is the
// charge.success example of Paystack's docs (PaystackOSS/doc-code-snippets,
// src/doc/payments/webhooks/events/transaction-successful.json, without its
// log), and the signature was computed outside Go (Python's hmac) by the
// documented recipe (https://paystack.com/docs/payments/webhooks/#verify-event-origin):
// the hex HMAC-SHA512 of the raw body under the secret key.
const (
	paystackSecret = "sk_test_2f3c0a8b9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"
	paystackBody   = `{"event":"charge.success","data":{"id":302961,"domain":"live","status":"success","reference":"qTPrJoy9Bx","amount":10000,` +
		`"message":null,"gateway_response":"Approved by Financial Institution","paid_at":"2016-09-30T21:10:19.000Z","created_at":"2016-09-30T21:09:56.000Z",` +
		`"channel":"card","currency":"NGN","ip_address":"41.242.49.37","metadata":0,"fees":null,"customer":{"id":68324,"first_name":"BoJack",` +
		`"last_name":"Horseman","email":"bojack@horseman.com","customer_code":"CUS_qo38as2hpsgk2r0","phone":null,"metadata":null,"risk_action":"default"},` +
		`"authorization":{"authorization_code":"AUTH_f5rnfq9p","bin":"539999","last4":"8877","exp_month":"08","exp_year":"2020","card_type":"mastercard DEBIT",` +
		`"bank":"Guaranty Trust Bank","country_code":"NG","brand":"mastercard","account_name":"BoJack Horseman"},"plan":{}}}`
	paystackSignature = "879a4e29b7b96514fe525f73752b4f66df8f61abc839f5eb25354bea15892ae4a72d83783a8c2972f48c597d60bd456be634821b66d1128cef283f31df8e2e9e"
)

func paystackRequest(sig, body string) *Request { return post(body, "x-paystack-signature", sig) }

func TestPaystackVerifiesDocumentedScheme(t *testing.T) {
	wantVerified(t, adapter(t, "paystack").Verify(paystackRequest(paystackSignature, paystackBody), secrets(paystackSecret), nil))
}

func TestPaystackAcceptsRotatedSecrets(t *testing.T) {
	// A rolled secret key: the old one stays until Paystack signs with the new.
	r := paystackRequest(paystackSignature, paystackBody)
	wantVerified(t, adapter(t, "paystack").Verify(r, secrets("sk_test_rolled_key", paystackSecret), nil))
}

func TestPaystackRejects(t *testing.T) {
	wantAllRejected(t, "paystack", nil, []rejectCase{
		{"tampered body", paystackRequest(paystackSignature, strings.Replace(paystackBody, `"amount":10000`, `"amount":1000000`, 1)), secrets(paystackSecret)},
		{"wrong secret", paystackRequest(paystackSignature, paystackBody), secrets("sk_test_other")},
		{"no secrets", paystackRequest(paystackSignature, paystackBody), nil},
		{"empty secret", paystackRequest(hexMAC(sha512.New, "", paystackBody), paystackBody), secrets("")},
		{"missing header", paystackRequest("", paystackBody), secrets(paystackSecret)},
		{"sha256 instead of sha512", paystackRequest(hexMAC(sha256.New, paystackSecret, paystackBody), paystackBody), secrets(paystackSecret)},
		{"truncated signature", paystackRequest(paystackSignature[:64], paystackBody), secrets(paystackSecret)},
	})
}

func TestPaystackInterpretsChargeSuccess(t *testing.T) {
	ev := oneEvent(t, adapter(t, "paystack"), paystackRequest("", paystackBody), nil)
	if ev.Type != "paystack.charge.success" || ev.Kind != intake.KindEvent || ev.ProviderEventID != "charge.success:302961:success" {
		t.Fatalf("got type %q kind %q id %q", ev.Type, ev.Kind, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"qTPrJoy9Bx", "302961", "CUS_qo38as2hpsgk2r0"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2016, 9, 30, 21, 10, 19, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != paystackBody {
		t.Errorf("Data = %s, want the body", ev.Data)
	}
}

func TestPaystackTellsRepeatedEventsAboutOneObjectApart(t *testing.T) {
	// A dispute is reminded more than once: each reminder moves updated_at.
	remind := func(updated string) string {
		return `{"event":"charge.dispute.remind","data":{"id":358950,"status":"awaiting-merchant-feedback","updated_at":"` + updated + `"}}`
	}
	a := oneEvent(t, adapter(t, "paystack"), paystackRequest("", remind("2020-11-24T18:00:02.000Z")), nil)
	b := oneEvent(t, adapter(t, "paystack"), paystackRequest("", remind("2020-11-25T18:00:02.000Z")), nil)
	if a.ProviderEventID == b.ProviderEventID || a.ProviderEventID != "charge.dispute.remind:358950:2020-11-24T18:00:02.000Z" {
		t.Fatalf("ids %q and %q", a.ProviderEventID, b.ProviderEventID)
	}
	// An invoice that fails and then succeeds: two invoice.update events.
	inv := func(status string) string {
		return `{"event":"invoice.update","data":{"invoice_code":"INV_kmhuaaur5c9ruh2","status":"` + status + `"}}`
	}
	failed := oneEvent(t, adapter(t, "paystack"), paystackRequest("", inv("failed")), nil)
	paid := oneEvent(t, adapter(t, "paystack"), paystackRequest("", inv("success")), nil)
	if failed.ProviderEventID == paid.ProviderEventID || paid.ProviderEventID != "invoice.update:INV_kmhuaaur5c9ruh2:success" {
		t.Fatalf("ids %q and %q", failed.ProviderEventID, paid.ProviderEventID)
	}
}

func TestPaystackSplitsExpiringCards(t *testing.T) {
	body := `{"event":"subscription.expiring_cards","data":[` +
		`{"expiry_date":"12/2021","description":"visa ending with 4081","subscription":{"subscription_code":"SUB_lejj927x2kxciw1"},"customer":{"customer_code":"CUS_8v6g420rc16spqw"}},` +
		`{"expiry_date":"01/2022","description":"visa ending with 1234","subscription":{"subscription_code":"SUB_2"},"customer":{"customer_code":"CUS_2"}}]}`
	in, err := adapter(t, "paystack").Interpret(paystackRequest("", body), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	first := in.Events[0]
	if first.ProviderEventID != "subscription.expiring_cards:SUB_lejj927x2kxciw1:12/2021" || first.Type != "paystack.subscription.expiring_cards" ||
		!equalStrings(first.ObjectIDs, []string{"SUB_lejj927x2kxciw1", "CUS_8v6g420rc16spqw"}) {
		t.Errorf("first event = %+v", first)
	}
	if in.EventType != "paystack.subscription.expiring_cards" || in.ProviderEventID != "" {
		t.Errorf("message fields %q %q", in.EventType, in.ProviderEventID)
	}
}

func TestPaystackRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"data":{}}`, `{"event":1}`, "[]"} {
		_, err := adapter(t, "paystack").Interpret(paystackRequest("", body), nil)
		wantPermanent(t, err)
	}
}

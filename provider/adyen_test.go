package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// SDK vectors. adyenNodeBody's item is the one in
// Adyen/adyen-node-api-library, src/__tests__/hmacValidator.spec.ts, which
// signs "pspReference:originalReference:merchantAccount:reference:1000:EUR:CAPTURE:true"
// under adyenNodeKey as adyenNodeSig. adyenRubyBody's item is the one in
// Adyen/adyen-ruby-api-library, spec/utils/hmac_validator_spec.rb, with no
// originalReference (signed as an empty field) and its own key.
const (
	adyenNodeKey  = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	adyenNodeSig  = "xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0="
	adyenNodeBody = `{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0="},` +
		`"amount":{"currency":"EUR","value":1000},"eventCode":"CAPTURE","eventDate":"1970-01-01T00:00:00.000Z","merchantAccountCode":"merchantAccount",` +
		`"merchantReference":"reference","originalReference":"originalReference","paymentMethod":"VISA","pspReference":"pspReference","reason":"reason","success":"true"}}]}`

	adyenRubyKey  = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	adyenRubyBody = `{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="},` +
		`"amount":{"value":1130,"currency":"EUR"},"pspReference":"7914073381342284","eventCode":"AUTHORISATION","merchantAccountCode":"TestMerchant",` +
		`"merchantReference":"TestPayment-1407325143704","paymentMethod":"visa","success":"true"}}]}`
)

// adyenItem is a signed NotificationRequestItem under the hex key.
func adyenItem(key, psp, code, success string, value int) string {
	raw, _ := hex.DecodeString(key)
	signed := fmt.Sprintf("%s::TestMerchant:ref-%s:%d:EUR:%s:%s", psp, psp, value, code, success)
	sig := b64MAC(sha256.New, string(raw), signed)
	return fmt.Sprintf(`{"NotificationRequestItem":{"additionalData":{"hmacSignature":%q},"amount":{"currency":"EUR","value":%d},`+
		`"eventCode":%q,"eventDate":"2025-03-14T10:26:50+01:00","merchantAccountCode":"TestMerchant","merchantReference":"ref-%s","pspReference":%q,"success":%q}}`,
		sig, value, code, psp, psp, success)
}

func adyenBody(items ...string) string {
	return `{"live":"false","notificationItems":[` + strings.Join(items, ",") + `]}`
}

func TestAdyenVerifiesSDKVectors(t *testing.T) {
	wantVerified(t, adapter(t, "adyen").Verify(post(adyenNodeBody), secrets(adyenNodeKey), nil))
	wantVerified(t, adapter(t, "adyen").Verify(post(adyenRubyBody), secrets(adyenRubyKey), nil))
	// Hex keys are read in either case; every secret is tried.
	wantVerified(t, adapter(t, "adyen").Verify(post(adyenRubyBody), secrets(adyenNodeKey, strings.ToLower(adyenRubyKey)), nil))
}

func TestAdyenVerifiesABatchWhoseItemsAreAllSigned(t *testing.T) {
	body := adyenBody(adyenItem(adyenRubyKey, "psp1", "AUTHORISATION", "true", 100), adyenItem(adyenRubyKey, "psp2", "CAPTURE", "false", 200))
	wantVerified(t, adapter(t, "adyen").Verify(post(body), secrets(adyenRubyKey), nil))
}

func TestAdyenRejects(t *testing.T) {
	good := adyenItem(adyenRubyKey, "psp1", "AUTHORISATION", "true", 100)
	otherKey := adyenItem(adyenNodeKey, "psp2", "AUTHORISATION", "true", 100)
	unsigned := strings.Replace(good, `"additionalData":{"hmacSignature":`, `"additionalData":{"other":`, 1)
	wantAllRejected(t, "adyen", nil, []rejectCase{
		// The SDKs' own negative case.
		{"invalid signature (SDK case)", post(strings.Replace(adyenNodeBody, adyenNodeSig, "notValidSign", 1)), secrets(adyenNodeKey)},
		{"amount changed by one byte", post(strings.Replace(adyenNodeBody, `"value":1000`, `"value":1001`, 1)), secrets(adyenNodeKey)},
		{"success changed", post(strings.Replace(adyenNodeBody, `"success":"true"`, `"success":"false"`, 1)), secrets(adyenNodeKey)},
		{"wrong key", post(adyenNodeBody), secrets(adyenRubyKey)},
		{"key not hex", post(adyenNodeBody), secrets("not-a-hex-key")},
		{"no secrets", post(adyenNodeBody), nil},
		{"empty secret", post(adyenNodeBody), secrets("")},
		{"item without hmacSignature", post(adyenBody(unsigned)), secrets(adyenRubyKey)},
		{"one item of two signed with another key", post(adyenBody(good, otherKey)), secrets(adyenRubyKey)},
		{"one item of two unsigned", post(adyenBody(good, unsigned)), secrets(adyenRubyKey)},
		{"no items", post(adyenBody()), secrets(adyenRubyKey)},
		{"not a notification", post(`[accepted]`), secrets(adyenRubyKey)},
	})
}

func TestAdyenAnswersAccepted(t *testing.T) {
	c, ok := adapter(t, "adyen").(Challenger).Challenge(post(adyenNodeBody), nil, nil)
	if !ok || c.Status != http.StatusOK || string(c.Body) != "[accepted]" {
		t.Fatalf("Challenge = %+v, %v; want 200 [accepted]", c, ok)
	}
	in, err := adapter(t, "adyen").Interpret(post(adyenNodeBody), nil)
	if err != nil || in.Challenge || len(in.Events) != 1 {
		t.Fatalf("the answered notification still makes its event: %+v, %v", in, err)
	}
}

func TestAdyenInterpretsOneEventPerItem(t *testing.T) {
	body := adyenBody(adyenItem(adyenRubyKey, "psp1", "AUTHORISATION", "true", 100), adyenItem(adyenRubyKey, "psp1", "CAPTURE", "false", 100))
	in, err := adapter(t, "adyen").Interpret(post(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != 2 || in.EventType != "adyen.batch" {
		t.Fatalf("got %d events, message type %q", len(in.Events), in.EventType)
	}
	for i, want := range []struct{ id, typ string }{{"psp1:AUTHORISATION:true", "adyen.AUTHORISATION"}, {"psp1:CAPTURE:false", "adyen.CAPTURE"}} {
		ev := in.Events[i]
		if ev.ProviderEventID != want.id || ev.Type != want.typ || ev.Kind != intake.KindEvent {
			t.Errorf("event %d: id %q type %q", i, ev.ProviderEventID, ev.Type)
		}
		if !equalStrings(ev.ObjectIDs, []string{"psp1", "ref-psp1"}) || ev.OccurredAt.Format("15:04:05Z07:00") != "09:26:50Z" {
			t.Errorf("event %d: ObjectIDs %v OccurredAt %v", i, ev.ObjectIDs, ev.OccurredAt)
		}
	}
	in, err = adapter(t, "adyen").Interpret(post(adyenNodeBody), nil)
	if err != nil || len(in.Events) != 1 || in.EventType != "adyen.CAPTURE" {
		t.Fatalf("node vector: %+v, %v", in, err)
	}
	ev := in.Events[0]
	if ev.ProviderEventID != "pspReference:CAPTURE:true" || !equalStrings(ev.ObjectIDs, []string{"pspReference", "originalReference", "reference"}) {
		t.Errorf("node vector: id %q ObjectIDs %v", ev.ProviderEventID, ev.ObjectIDs)
	}
	if !strings.Contains(string(ev.Data), `"pspReference":"pspReference"`) || strings.Contains(string(ev.Data), "notificationItems") {
		t.Errorf("Data = %s, want the item", ev.Data)
	}
}

func TestAdyenNamesEveryItemOfABatchPastTheMaximum(t *testing.T) {
	// The worker settles such a message dead with too_many_events; the
	// adapter must not cut the batch short.
	item := `{"NotificationRequestItem":{"eventCode":"REPORT_AVAILABLE","pspReference":"p","success":"true"}}`
	items := make([]string, intake.MaxEventsPerMessage+1)
	for i := range items {
		items[i] = strings.Replace(item, `"p"`, fmt.Sprintf(`"p%d"`, i), 1)
	}
	in, err := adapter(t, "adyen").Interpret(post(adyenBody(items...)), nil)
	if err != nil || len(in.Events) != intake.MaxEventsPerMessage+1 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestAdyenRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "[accepted]", `{"notificationItems":[]}`, `{"notificationItems":[{"x":1}]}`,
		`{"notificationItems":[{"NotificationRequestItem":{"pspReference":"p"}}]}`} {
		_, err := adapter(t, "adyen").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

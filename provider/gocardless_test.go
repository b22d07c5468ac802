package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// SDK vector, from gocardless/gocardless-pro-python, tests/webhooks_test.py
// and tests/fixtures/webhook_body.json: the body (without the file's final
// newline, which the test strips), key and hex signature below; the test's
// wrong key is refused.
const (
	gcSDKKey  = "ED7D658C-D8EB-4941-948B-3973214F2D49"
	gcSDKSig  = "2693754819d3e32d7e8fcb13c729631f316c6de8dc1cf634d6527f1c07276e7e"
	gcSDKBody = `{"events":[{"id":"EV00BD05S5VM2T","created_at":"2018-07-05T09:13:51.404Z","resource_type":"subscriptions","action":"created",` +
		`"links":{"subscription":"SB0003JJQ2MR06"},"details":{"origin":"api","cause":"subscription_created","description":"Subscription created via the API."},"metadata":{}},` +
		`{"id":"EV00BD05TB8K63","created_at":"2018-07-05T09:13:56.893Z","resource_type":"mandates","action":"created","links":{"mandate":"MD000AMA19XGEC"},` +
		`"details":{"origin":"api","cause":"mandate_created","description":"Mandate created via the API."},"metadata":{}}]}`
)

func gcRequest(sig, body string) *Request { return post(body, "Webhook-Signature", sig) }

func TestGoCardlessVerifiesSDKVector(t *testing.T) {
	wantVerified(t, adapter(t, "gocardless").Verify(gcRequest(gcSDKSig, gcSDKBody), secrets(gcSDKKey), nil))
	wantVerified(t, adapter(t, "gocardless").Verify(gcRequest(gcSDKSig, gcSDKBody), secrets("anotherkey", gcSDKKey), nil))
}

func TestGoCardlessRejects(t *testing.T) {
	wantAllRejected(t, "gocardless", nil, []rejectCase{
		{"wrong key (SDK case)", gcRequest(gcSDKSig, gcSDKBody), secrets("anotherkey")},
		{"body changed by one byte", gcRequest(gcSDKSig, strings.Replace(gcSDKBody, "EV00BD05S5VM2T", "EV00BD05S5VM2U", 1)), secrets(gcSDKKey)},
		{"trailing newline added", gcRequest(gcSDKSig, gcSDKBody+"\n"), secrets(gcSDKKey)},
		{"no secrets", gcRequest(gcSDKSig, gcSDKBody), nil},
		{"empty secret", gcRequest(sha256Hex("", gcSDKBody), gcSDKBody), secrets("")},
		{"missing header", gcRequest("", gcSDKBody), secrets(gcSDKKey)},
	})
}

func TestGoCardlessInterpretsOneEventPerItem(t *testing.T) {
	in, err := adapter(t, "gocardless").Interpret(gcRequest(gcSDKSig, gcSDKBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != 2 || in.EventType != "gocardless.batch" || in.ProviderEventID != "" {
		t.Fatalf("got %d events, message %q %q", len(in.Events), in.ProviderEventID, in.EventType)
	}
	for i, want := range []struct{ id, typ, object string }{
		{"EV00BD05S5VM2T", "gocardless.subscriptions.created", "SB0003JJQ2MR06"},
		{"EV00BD05TB8K63", "gocardless.mandates.created", "MD000AMA19XGEC"},
	} {
		ev := in.Events[i]
		if ev.ProviderEventID != want.id || ev.Type != want.typ || ev.Kind != intake.KindEvent || !equalStrings(ev.ObjectIDs, []string{want.object}) {
			t.Errorf("event %d: id %q type %q objects %v", i, ev.ProviderEventID, ev.Type, ev.ObjectIDs)
		}
		if ev.OccurredAt.IsZero() || !strings.HasPrefix(string(ev.Data), `{"action":"created"`) {
			t.Errorf("event %d: OccurredAt %v Data %s", i, ev.OccurredAt, ev.Data)
		}
	}
}

func TestGoCardlessNamesEveryEventOfABatchPastTheMaximum(t *testing.T) {
	// The worker settles such a message dead with too_many_events.
	items := make([]string, intake.MaxEventsPerMessage+1)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":"EV%d","resource_type":"payments","action":"confirmed","links":{"payment":"PM%d"}}`, i, i)
	}
	in, err := adapter(t, "gocardless").Interpret(post(`{"events":[`+strings.Join(items, ",")+`]}`), nil)
	if err != nil || len(in.Events) != intake.MaxEventsPerMessage+1 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestGoCardlessRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"id":"EV1"}`, `{"events":[{"id":"EV1","action":"created"}]}`, "[]"} {
		_, err := adapter(t, "gocardless").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

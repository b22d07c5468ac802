package provider

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// LINE's SDK vectors, from line/line-bot-sdk-nodejs:
// test/validate-signature.spec.ts signs {"hello":"world"} under
// "test_secret"; test/middleware.spec.ts signs a one-event delivery (the
// JSON.stringify of its webhookEvent) under "test_channel_secret".
const (
	lineSDKSecret    = "test_secret"
	lineSDKBody      = `{"hello":"world"}`
	lineSDKSignature = "t7Hn4ZDHqs6e+wdvI5TyQIvzie0DmMUmuXEBqyyE/tM="
	lineSDKInvalid   = "t7Hn4ZDHqs6e+wdvi5TyQivzie0DmMUmuXEBqyyE/tM="

	lineMWSecret    = "test_channel_secret"
	lineMWBody      = `{"events":[{"message":{"id":"test_event_message_id","text":"this is test message.😄😅😢😞😄😅😢😞","quoteToken":"test_quote_token","type":"text"},"replyToken":"test_reply_token","source":{"groupId":"test_group_id","type":"group"},"webhookEventId":"test_webhook_event_id","deliveryContext":{"isRedelivery":false},"timestamp":0,"mode":"active","type":"message"}],"destination":"Uaaaabbbbccccddddeeeeffff"}`
	lineMWSignature = "eRdWYcVCzZV3MVZ3M9/rHJCl/a3oSbsRb04cLovpVwM="
)

func lineRequest(sig, body string) *Request { return post(body, "x-line-signature", sig) }

func TestLineVerifiesSDKVectors(t *testing.T) {
	a := adapter(t, "line")
	wantVerified(t, a.Verify(lineRequest(lineSDKSignature, lineSDKBody), secrets(lineSDKSecret), nil))
	wantVerified(t, a.Verify(lineRequest(lineMWSignature, lineMWBody), secrets("a-retired-secret", lineMWSecret), nil))
}

func TestLineRejects(t *testing.T) {
	wantAllRejected(t, "line", nil, []rejectCase{
		{"SDK's invalid signature", lineRequest(lineSDKInvalid, lineSDKBody), secrets(lineSDKSecret)},
		{"body changed by one byte", lineRequest(lineMWSignature, strings.Replace(lineMWBody, `"timestamp":0`, `"timestamp":1`, 1)), secrets(lineMWSecret)},
		{"wrong secret", lineRequest(lineMWSignature, lineMWBody), secrets(lineSDKSecret)},
		{"no secrets", lineRequest(lineMWSignature, lineMWBody), nil},
		{"empty secret", lineRequest(b64MAC(sha256.New, "", lineMWBody), lineMWBody), secrets("")},
		{"missing header", lineRequest("", lineMWBody), secrets(lineMWSecret)},
		{"truncated signature (SDK case)", lineRequest("WqJD7WAIZ6plkQGkj48w=", lineMWBody), secrets(lineMWSecret)},
		{"hex instead of base64", lineRequest(sha256Hex(lineMWSecret, lineMWBody), lineMWBody), secrets(lineMWSecret)},
	})
}

func TestLineInterpretsEachEventOfTheSDKDelivery(t *testing.T) {
	ev := oneEvent(t, adapter(t, "line"), lineRequest("", lineMWBody), nil)
	if ev.ProviderEventID != "test_webhook_event_id" || ev.Type != "line.message" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"test_group_id", "test_event_message_id"}) || !ev.OccurredAt.Equal(time.UnixMilli(0)) {
		t.Errorf("ObjectIDs %v OccurredAt %v", ev.ObjectIDs, ev.OccurredAt)
	}
	if !strings.Contains(string(ev.Data), `"replyToken":"test_reply_token"`) || strings.Contains(string(ev.Data), "destination") {
		t.Errorf("Data = %s, want the one event", ev.Data)
	}
}

func TestLineSplitsABatchIntoOneEventPerItem(t *testing.T) {
	body := `{"destination":"U1","events":[` +
		`{"type":"follow","webhookEventId":"01A","timestamp":1741944413000,"source":{"type":"user","userId":"U9"}},` +
		`{"type":"postback","webhookEventId":"01B","timestamp":1741944413001,"source":{"type":"room","roomId":"R1"},"postback":{"data":"x"}}]}`
	in, err := adapter(t, "line").Interpret(lineRequest("", body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != 2 || in.EventType != "line.batch" || in.ProviderEventID != "" || in.Challenge {
		t.Fatalf("got %+v", in)
	}
	a, b := in.Events[0], in.Events[1]
	if a.ProviderEventID != "01A" || a.Type != "line.follow" || !equalStrings(a.ObjectIDs, []string{"U9"}) {
		t.Errorf("first event %+v", a)
	}
	if b.ProviderEventID != "01B" || b.Type != "line.postback" || !b.OccurredAt.Equal(time.UnixMilli(1741944413001)) {
		t.Errorf("second event %+v", b)
	}
}

func TestLineVerificationRequestSettlesAsAChallenge(t *testing.T) {
	// What the console's Verify button sends: no events at all.
	in, err := adapter(t, "line").Interpret(lineRequest("", `{"destination":"Uaaaabbbbccccddddeeeeffff","events":[]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Challenge || len(in.Events) != 0 || in.EventType != "line.verification" {
		t.Fatalf("got %+v, want a challenge with no events", in)
	}
}

func TestLineBatchPastTheMaximumNamesEveryItem(t *testing.T) {
	// The worker makes a message dead too_many_events when its adapter
	// names more than the maximum; the adapter must not drop items to fit.
	n := intake.MaxEventsPerMessage + 1
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"type":"message","webhookEventId":"e%d"}`, i)
	}
	in, err := adapter(t, "line").Interpret(lineRequest("", `{"destination":"U1","events":[`+strings.Join(items, ",")+`]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != n {
		t.Fatalf("%d events, want %d", len(in.Events), n)
	}
}

func TestLineRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", lineSDKBody, `{"events":{}}`, `{"events":[1]}`, `{"events":[{"webhookEventId":"e"}]}`} {
		_, err := adapter(t, "line").Interpret(lineRequest("", body), nil)
		wantPermanent(t, err)
	}
}

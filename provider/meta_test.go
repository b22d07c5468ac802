package provider

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// Meta publishes no vector with an app secret; these requests are signed
// with a known secret as
// https://developers.facebook.com/docs/graph-api/webhooks/getting-started#event-notifications
// describes: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>.
const (
	metaSecret = "meta-app-secret"
	// WhatsApp Cloud API, shaped like
	// https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples.
	waBody = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{` +
		`"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},` +
		`"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],` +
		`"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}],` +
		`"statuses":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MUE0MDE3OEZBMzM4MzQ5OTgA","status":"delivered","timestamp":"1749416390","recipient_id":"16505551234"}]` +
		`},"field":"messages"}]}]}`
	pageBody = `{"object":"page","entry":[{"id":"1234567890","time":1520383571,"changes":[{"field":"feed","value":{"item":"post","post_id":"44444444_444444444","verb":"add"}}],` +
		`"messaging":[{"sender":{"id":"PSID1"},"recipient":{"id":"1234567890"},"timestamp":1520383571000,"message":{"mid":"m_AG5Hz2U","text":"hello"}}]}]}`
)

func metaRequest(sig, body string) *Request { return post(body, "X-Hub-Signature-256", sig) }

func metaHub(mode, token, challenge string) *Request {
	r := post("")
	r.Method = "GET"
	r.Query = url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
	return r
}

func TestMetaCodesVerifySignedNotification(t *testing.T) {
	for _, name := range []string{"meta", "whatsapp", "instagram"} {
		r := metaRequest("sha256="+sha256Hex(metaSecret, waBody), waBody)
		wantVerified(t, adapter(t, name).Verify(r, secrets("old", metaSecret), nil))
	}
}

func TestMetaRejects(t *testing.T) {
	sig := "sha256=" + sha256Hex(metaSecret, waBody)
	wantAllRejected(t, "whatsapp", Config{"verify_token": "vt"}, []rejectCase{
		{"tampered body", metaRequest(sig, strings.Replace(waBody, "color", "colour", 1)), secrets(metaSecret)},
		{"wrong secret", metaRequest(sig, waBody), secrets("other")},
		{"no secrets", metaRequest(sig, waBody), nil},
		{"missing header", metaRequest("", waBody), secrets(metaSecret)},
		{"sha1 signature", metaRequest("sha1="+sig[7:], waBody), secrets(metaSecret)},
		{"handshake with a wrong verify token", metaHub("subscribe", "guess", "1158201444"), secrets(metaSecret)},
	})
	// Without a configured verify token no handshake verifies.
	wantRejected(t, adapter(t, "meta").Verify(metaHub("subscribe", "", "1158201444"), secrets(metaSecret), nil))
}

func TestMetaAnswersHubChallenge(t *testing.T) {
	a := adapter(t, "instagram")
	cfg := Config{"verify_token": "meatyhamhock"}
	r := metaHub("subscribe", "meatyhamhock", "1158201444")
	c, ok := a.(Challenger).Challenge(r, nil, cfg)
	if !ok || c.Status != 200 || c.ContentType != "text/plain" || string(c.Body) != "1158201444" {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	wantVerified(t, a.Verify(r, nil, cfg))
	in, err := a.Interpret(r, cfg)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
	for _, bad := range []Config{{"verify_token": "other"}, nil} {
		if c, ok := a.(Challenger).Challenge(r, nil, bad); !ok || c.Status != 403 || len(c.Body) != 0 {
			t.Errorf("Challenge with config %v = %+v, %v; want 403", bad, c, ok)
		}
	}
	if _, ok := a.(Challenger).Challenge(metaRequest("", pageBody), nil, cfg); ok {
		t.Error("a notification was answered as a handshake")
	}
}

func TestWhatsAppSplitsMessagesAndStatuses(t *testing.T) {
	in, err := adapter(t, "whatsapp").Interpret(metaRequest("", waBody), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	msg, st := in.Events[0], in.Events[1]
	if msg.Type != "whatsapp.message" || msg.ProviderEventID != "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=" ||
		!msg.OccurredAt.Equal(time.Unix(1749416383, 0)) {
		t.Errorf("message: type %q id %q at %v", msg.Type, msg.ProviderEventID, msg.OccurredAt)
	}
	if !equalStrings(msg.ObjectIDs, []string{"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", "16505551234", "106540352242922"}) {
		t.Errorf("message objects %v", msg.ObjectIDs)
	}
	if strings.Contains(string(msg.Data), "statuses") || !strings.Contains(string(msg.Data), "Sheena Nelson") {
		t.Errorf("message data %s", msg.Data)
	}
	if st.Type != "whatsapp.status.delivered" || st.ProviderEventID != "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MUE0MDE3OEZBMzM4MzQ5OTgA:delivered" {
		t.Errorf("status: type %q id %q", st.Type, st.ProviderEventID)
	}
	if in.ProviderEventID != "" || in.EventType != "whatsapp.batch" {
		t.Errorf("message-level id %q type %q", in.ProviderEventID, in.EventType)
	}
}

func TestMetaSplitsPageChangesAndMessagingWithStableIDs(t *testing.T) {
	in, err := adapter(t, "meta").Interpret(metaRequest("", pageBody), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	feed, msg := in.Events[0], in.Events[1]
	if feed.Type != "meta.feed" || !strings.HasPrefix(feed.ProviderEventID, "meta:1234567890:") ||
		!equalStrings(feed.ObjectIDs, []string{"1234567890", "44444444_444444444"}) {
		t.Errorf("feed: type %q id %q objects %v", feed.Type, feed.ProviderEventID, feed.ObjectIDs)
	}
	if msg.Type != "meta.messaging.message" || msg.ProviderEventID != "m_AG5Hz2U" || !msg.OccurredAt.Equal(time.UnixMilli(1520383571000)) {
		t.Errorf("messaging: type %q id %q at %v", msg.Type, msg.ProviderEventID, msg.OccurredAt)
	}
	// The same change in a later notification, beside other entries, keeps its id.
	again, _ := adapter(t, "meta").Interpret(metaRequest("", `{"object":"page","entry":[{"id":"1","time":1,"changes":[{"field":"x","value":{}}]},`+
		`{"id":"1234567890","time":1520383571,"changes":[{"field":"feed","value":{"verb":"add","post_id":"44444444_444444444","item":"post"}}]}]}`), nil)
	if len(again.Events) != 2 || again.Events[1].ProviderEventID != feed.ProviderEventID {
		t.Errorf("re-sent change named %+v, want %q", again.Events, feed.ProviderEventID)
	}
}

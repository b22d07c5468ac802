package provider

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// Mailgun publishes its example signature without the key; these requests
// are signed with a known HTTP webhook signing key as
// https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/#securing-webhooks
// describes: hex HMAC-SHA256 of timestamp + token.
const (
	mgKey   = "key-0123456789abcdef0123456789abcdef"
	mgToken = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
)

func mgBody(key, ts string) string {
	return `{"signature":{"timestamp":"` + ts + `","token":"` + mgToken + `","signature":"` + sha256Hex(key, ts+mgToken) + `"},` +
		`"event-data":{"event":"delivered","timestamp":1521472262.908181,"id":"CPgfbmQMTCKtHW6uIWtuVe",` +
		`"message":{"headers":{"message-id":"20130503182626.18666.16540@sandbox.mailgun.org","to":"Alice <alice@example.com>"}},` +
		`"recipient":"alice@example.com"}}`
}

func TestMailgunVerifiesSignedEvent(t *testing.T) {
	wantVerified(t, adapter(t, "mailgun").Verify(post(mgBody(mgKey, unix(received))), secrets("key-old", mgKey), nil))
}

func TestMailgunVerifiesLegacyFormPost(t *testing.T) {
	ts := unix(received)
	form := url.Values{"event": {"delivered"}, "timestamp": {ts}, "token": {mgToken}, "signature": {sha256Hex(mgKey, ts+mgToken)},
		"Message-Id": {"<20130503182626.18666.16540@sandbox.mailgun.org>"}}
	r := post(form.Encode())
	wantVerified(t, adapter(t, "mailgun").Verify(r, secrets(mgKey), nil))
	ev := oneEvent(t, adapter(t, "mailgun"), r, nil)
	if ev.Type != "mailgun.delivered" || ev.ProviderEventID != "" || strings.Contains(string(ev.Data), mgToken) {
		t.Fatalf("got type %q id %q data %s", ev.Type, ev.ProviderEventID, ev.Data)
	}
}

func TestMailgunRejects(t *testing.T) {
	body := mgBody(mgKey, unix(received))
	retimed := strings.Replace(body, `"timestamp":"`+unix(received)+`"`, `"timestamp":"`+unix(received.Add(time.Second))+`"`, 1)
	wantAllRejected(t, "mailgun", nil, []rejectCase{
		{"re-dated", post(retimed), secrets(mgKey)},
		{"wrong key", post(body), secrets("key-other")},
		{"no secrets", post(body), nil},
		{"no signature", post(`{"event-data":{"event":"delivered"}}`), secrets(mgKey)},
		{"not a body Mailgun sends", post(`%zz`), secrets(mgKey)},
	})
}

func TestMailgunJudgesTimestampOnlyWhenToleranceIsSet(t *testing.T) {
	old := post(mgBody(mgKey, unix(received.Add(-time.Hour))))
	wantVerified(t, adapter(t, "mailgun").Verify(old, secrets(mgKey), nil))
	wantRejected(t, adapter(t, "mailgun").Verify(old, secrets(mgKey), Config{"tolerance": "15m"}))
	future := post(mgBody(mgKey, unix(received.Add(time.Hour))))
	wantRejected(t, adapter(t, "mailgun").Verify(future, secrets(mgKey), Config{"tolerance": "15m"}))
}

func TestMailgunInterpretsEventData(t *testing.T) {
	ev := oneEvent(t, adapter(t, "mailgun"), post(mgBody(mgKey, unix(received))), nil)
	if ev.Type != "mailgun.delivered" || ev.ProviderEventID != "CPgfbmQMTCKtHW6uIWtuVe" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"20130503182626.18666.16540@sandbox.mailgun.org"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Unix(1521472262, 908181000)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if strings.Contains(string(ev.Data), "signature") || !strings.HasPrefix(string(ev.Data), `{"event":"delivered"`) {
		t.Errorf("Data = %s, want the event-data", ev.Data)
	}
}

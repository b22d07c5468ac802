package provider

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Airtable documents the scheme and the notification ping
// (https://airtable.com/developers/web/api/webhooks-overview) but fixes no
// signed example; the ping below is its documented shape, signed here with
// a macSecretBase64 as Airtable issues one.
const (
	airtableMACSecret = "c2VjcmV0LW1hYy1rZXktZnJvbS1haXJ0YWJsZS0zMmI="
	airtableBody      = `{"base":{"id":"appUFnB7yWMaBdZV9"},"webhook":{"id":"achW8tXGm7b2H0MrZ"},"timestamp":"2022-02-01T21:25:05.663Z"}`
)

func airtableMAC(secretB64, body string) string {
	key, _ := base64.StdEncoding.DecodeString(secretB64)
	return airtableMACPrefix + sha256Hex(string(key), body)
}

func airtableRequest(mac, body string) *Request { return post(body, "X-Airtable-Content-MAC", mac) }

func TestAirtableVerifiesWithTheDecodedMACSecret(t *testing.T) {
	r := airtableRequest(airtableMAC(airtableMACSecret, airtableBody), airtableBody)
	wantVerified(t, adapter(t, "airtable").Verify(r, secrets("bm90LXRoaXMtb25l", airtableMACSecret), nil))
}

func TestAirtableRejects(t *testing.T) {
	good := airtableMAC(airtableMACSecret, airtableBody)
	wantAllRejected(t, "airtable", nil, []rejectCase{
		{"body changed by one byte", airtableRequest(good, strings.Replace(airtableBody, "achW8", "achW9", 1)), secrets(airtableMACSecret)},
		{"wrong secret", airtableRequest(good, airtableBody), secrets("bm90LXRoaXMtb25l")},
		{"secret used undecoded", airtableRequest(airtableMACPrefix+sha256Hex(airtableMACSecret, airtableBody), airtableBody), secrets(airtableMACSecret)},
		{"secret not base64", airtableRequest(airtableMACPrefix+sha256Hex("not base64!", airtableBody), airtableBody), secrets("not base64!")},
		{"no secrets", airtableRequest(good, airtableBody), nil},
		{"empty secret", airtableRequest(airtableMACPrefix+sha256Hex("", airtableBody), airtableBody), secrets("")},
		{"missing header", airtableRequest("", airtableBody), secrets(airtableMACSecret)},
		{"no prefix", airtableRequest(strings.TrimPrefix(good, airtableMACPrefix), airtableBody), secrets(airtableMACSecret)},
		{"another algorithm", airtableRequest(strings.Replace(good, "sha256", "sha512", 1), airtableBody), secrets(airtableMACSecret)},
	})
}

func TestAirtableInterpretsTheNotificationPing(t *testing.T) {
	ev := oneEvent(t, adapter(t, "airtable"), airtableRequest("", airtableBody), nil)
	if ev.ProviderEventID != "achW8tXGm7b2H0MrZ:2022-02-01T21:25:05.663Z" || ev.Type != "airtable.notification" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2022, 2, 1, 21, 25, 5, 663e6, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"appUFnB7yWMaBdZV9", "achW8tXGm7b2H0MrZ"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
}

func TestAirtableRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"base":{"id":"app1"}}`, "[]"} {
		_, err := adapter(t, "airtable").Interpret(airtableRequest("", body), nil)
		wantPermanent(t, err)
	}
}

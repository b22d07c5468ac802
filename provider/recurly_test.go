package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// SDK vector, from recurly/recurly-client-ruby, spec/recurly/webhooks_spec.rb
// ("with notification older than five minutes"): the secret, body and
// header below verify at the header's time, and are refused five minutes
// and more after it.
const (
	recurlySDKSecret = "354fab5bd35f5a0d50845ee7e30165244468b13c2c343f104e4e730a59326d9d"
	recurlySDKBody   = `{"id":"rjxwmwedwqug","object_type":"account","site_id":"qc326l1hl8k9","event_type":"created","event_time":"2022-09-13T21:18:40Z","account_code":"adfas23zzz14123"}`
	recurlySDKSig    = "ad24699f3beaa24c9af2cc7ada3ce4c835da0090194241b9d3add83d27f14bc3"
	recurlySDKHeader = "1663103925004," + recurlySDKSig
)

var recurlySDKTime = time.UnixMilli(1663103925004)

func recurlyRequest(header, body string, at time.Time) *Request {
	r := post(body, "recurly-signature", header)
	r.ReceivedAt = at
	return r
}

func TestRecurlyVerifiesSDKVector(t *testing.T) {
	wantVerified(t, adapter(t, "recurly").Verify(recurlyRequest(recurlySDKHeader, recurlySDKBody, recurlySDKTime), secrets(recurlySDKSecret), nil))
	// The SDK's "multiple signatures in header" case, and a rotated secret.
	multi := "1663103925004,de1ec7ab1e," + recurlySDKSig
	wantVerified(t, adapter(t, "recurly").Verify(recurlyRequest(multi, recurlySDKBody, recurlySDKTime.Add(299*time.Second)), secrets("key", recurlySDKSecret), nil))
	// Tolerance is either way, as the SDK's absolute difference.
	wantVerified(t, adapter(t, "recurly").Verify(recurlyRequest(recurlySDKHeader, recurlySDKBody, recurlySDKTime.Add(-299*time.Second)), secrets(recurlySDKSecret), nil))
}

func TestRecurlyRejects(t *testing.T) {
	at := recurlySDKTime
	wantAllRejected(t, "recurly", nil, []rejectCase{
		// The SDK's own negative cases.
		{"secrets mismatched", recurlyRequest(recurlySDKHeader, recurlySDKBody, at), secrets("key")},
		{"payload body altered", recurlyRequest(recurlySDKHeader, "{}", at), secrets(recurlySDKSecret)},
		{"header timestamp altered", recurlyRequest("1663103926004,"+recurlySDKSig, recurlySDKBody, at), secrets(recurlySDKSecret)},
		{"older than five minutes", recurlyRequest(recurlySDKHeader, recurlySDKBody, at.Add(301*time.Second)), secrets(recurlySDKSecret)},
		{"malformed timestamp", recurlyRequest("abc,"+recurlySDKSig, recurlySDKBody, at), secrets(recurlySDKSecret)},
		{"no signatures in header", recurlyRequest("1663103925004,", recurlySDKBody, at), secrets(recurlySDKSecret)},
		// And ours.
		{"body changed by one byte", recurlyRequest(recurlySDKHeader, strings.Replace(recurlySDKBody, "created", "createD", 1), at), secrets(recurlySDKSecret)},
		{"too new", recurlyRequest(recurlySDKHeader, recurlySDKBody, at.Add(-301*time.Second)), secrets(recurlySDKSecret)},
		{"seconds, not milliseconds", recurlyRequest("1663103925,"+sha256Hex(recurlySDKSecret, "1663103925."+recurlySDKBody), recurlySDKBody, time.Unix(1663103925, 0)), secrets(recurlySDKSecret)},
		{"no secrets", recurlyRequest(recurlySDKHeader, recurlySDKBody, at), nil},
		{"empty secret", recurlyRequest("1663103925004,"+sha256Hex("", "1663103925004."+recurlySDKBody), recurlySDKBody, at), secrets("")},
		{"missing header", recurlyRequest("", recurlySDKBody, at), secrets(recurlySDKSecret)},
	})
}

func TestRecurlyToleranceIsConfigurable(t *testing.T) {
	r := recurlyRequest(recurlySDKHeader, recurlySDKBody, recurlySDKTime.Add(time.Hour))
	wantRejected(t, adapter(t, "recurly").Verify(r, secrets(recurlySDKSecret), nil))
	wantVerified(t, adapter(t, "recurly").Verify(r, secrets(recurlySDKSecret), Config{"tolerance": "2h"}))
}

func TestRecurlyInterpretsTheNotification(t *testing.T) {
	ev := oneEvent(t, adapter(t, "recurly"), post(recurlySDKBody), nil)
	if ev.ProviderEventID != "rjxwmwedwqug" || ev.Type != "recurly.account.created" || ev.Kind != intake.KindEvent {
		t.Fatalf("id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"adfas23zzz14123"}) || !ev.OccurredAt.Equal(time.Date(2022, 9, 13, 21, 18, 40, 0, time.UTC)) || string(ev.Data) != recurlySDKBody {
		t.Errorf("ObjectIDs %v OccurredAt %v Data %s", ev.ObjectIDs, ev.OccurredAt, ev.Data)
	}
}

func TestRecurlyRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "<xml/>", `{"id":"x","object_type":"account"}`, "[]"} {
		_, err := adapter(t, "recurly").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

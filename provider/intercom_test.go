package provider

import (
	"crypto/sha1"
	"testing"
	"time"
)

// Intercom publishes no vector with its secret; these requests are signed
// with a known client secret as its docs describe: X-Hub-Signature:
// sha1=<hex HMAC-SHA1 of the body>.
const (
	intercomSecret = "intercom-client-secret"
	intercomBody   = `{"type":"notification_event","app_id":"ecahpwf5","data":{"type":"notification_event_data",` +
		`"item":{"type":"conversation","id":"147"}},"id":"notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3",` +
		`"topic":"conversation.user.created","delivery_attempts":1,"first_sent_at":1392731331,"created_at":1392731331}`
)

func intercomRequest(sig string) *Request { return post(intercomBody, "X-Hub-Signature", sig) }

func TestIntercomVerifiesSignedDelivery(t *testing.T) {
	sig := "sha1=" + hexMAC(sha1.New, intercomSecret, intercomBody)
	wantVerified(t, adapter(t, "intercom").Verify(intercomRequest(sig), secrets("old-secret", intercomSecret), nil))
}

func TestIntercomRejects(t *testing.T) {
	sig := "sha1=" + hexMAC(sha1.New, intercomSecret, intercomBody)
	tampered := intercomRequest(sig)
	tampered.Body = []byte(intercomBody + "\n")
	wantAllRejected(t, "intercom", nil, []rejectCase{
		{"tampered body", tampered, secrets(intercomSecret)},
		{"wrong secret", intercomRequest(sig), secrets("nope")},
		{"no secrets", intercomRequest(sig), nil},
		{"missing header", intercomRequest(""), secrets(intercomSecret)},
		{"sha256 prefix", intercomRequest("sha256=" + sig[5:]), secrets(intercomSecret)},
	})
}

func TestIntercomInterpretsNotification(t *testing.T) {
	ev := oneEvent(t, adapter(t, "intercom"), intercomRequest(""), nil)
	if ev.Type != "intercom.conversation.user.created" || ev.ProviderEventID != "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"147"}) || !ev.OccurredAt.Equal(time.Unix(1392731331, 0)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
}

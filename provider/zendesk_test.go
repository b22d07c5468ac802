package provider

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Zendesk publishes no vector for the scheme its docs now state, so this one
// is computed as https://developer.zendesk.com/documentation/webhooks/verifying/
// describes, base64(HMACSHA256(TIMESTAMP + BODY)), with Node's
// crypto.createHmac as the page's example does: the page's example signing
// secret (used as written), the event example of
// https://developer.zendesk.com/api-reference/webhooks/event-types/webhook-event-types/
// and a timestamp three seconds before receipt.
const (
	zendeskDocSecret    = "dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ=="
	zendeskDocBody      = `{"type":"zen:event-type:user.active_changed","account_id":12514403,"id":"2b24ef10-19d4-4740-93cf-8f98ec4776c0","time":"2099-07-04T05:33:18Z","zendesk_event_version":"2022-06-20","subject":"zen:user:6596848315901","detail":{"created_at":"2099-07-04T05:27:58Z","email":"johnny@example.com","external_id":"","default_group_id":"0","id":"6596848315901","organization_id":"0","role":"end-user","updated_at":"2099-07-04T05:33:18Z"},"event":{"current":false,"previous":true}}`
	zendeskDocTimestamp = "2025-03-14T09:26:50Z"
	zendeskDocSignature = "t0Jiadl3Qqif2GWIaPdNq9BE7MlpcbH71Eicl2EyBbE="
)

func zendeskRequest(sig, ts, body string, at time.Time) *Request {
	r := post(body, zendeskSignatureHeader, sig, zendeskTimestampHeader, ts,
		"X-Zendesk-Webhook-Id", "01F1KRFQ6BG29CNWFR60NK5FNY", zendeskInvocationHeader, "8350205582")
	r.ReceivedAt = at
	return r
}

func TestZendeskVerifiesDocumentedScheme(t *testing.T) {
	if got := b64MAC(sha256.New, zendeskDocSecret, zendeskDocTimestamp+zendeskDocBody); got != zendeskDocSignature {
		t.Fatalf("test signer gives %s, the vector says %s", got, zendeskDocSignature)
	}
	r := zendeskRequest(zendeskDocSignature, zendeskDocTimestamp, zendeskDocBody, received)
	wantVerified(t, adapter(t, "zendesk").Verify(r, secrets(zendeskDocSecret), nil))
}

func TestZendeskAcceptsRotatedSecret(t *testing.T) {
	r := zendeskRequest(zendeskDocSignature, zendeskDocTimestamp, zendeskDocBody, received)
	wantVerified(t, adapter(t, "zendesk").Verify(r, secrets("the-reset-secret", zendeskDocSecret), nil))
}

func TestZendeskVerifiesBodilessRequest(t *testing.T) {
	// GET and DELETE webhooks sign the timestamp alone.
	r := zendeskRequest(b64MAC(sha256.New, zendeskDocSecret, zendeskDocTimestamp), zendeskDocTimestamp, "", received)
	r.Method = "GET"
	wantVerified(t, adapter(t, "zendesk").Verify(r, secrets(zendeskDocSecret), nil))
}

func TestZendeskSignsTimestampBeforeBody(t *testing.T) {
	// A 2021 version of the verifying page described, and gave an example
	// of, the body before the timestamp; the page now says TIMESTAMP + BODY,
	// and only that order verifies.
	const oldSecret, oldBody, oldTS, oldSig = "HRkRd4BeOAoUkfZr-mhauJT64rvBASlJRoIyPsd3zeA=", `{"say": "hello"}`,
		"2021-07-25T10:00:00Z", "tRDSF7URY8BLCDlaBcQ7FHu051Zk+aAB0NKMP53teMw="
	at := time.Date(2021, 7, 25, 10, 0, 1, 0, time.UTC)
	if b64MAC(sha256.New, oldSecret, oldBody+oldTS) != oldSig {
		t.Fatal("the old page's example is not body + timestamp")
	}
	wantRejected(t, adapter(t, "zendesk").Verify(zendeskRequest(oldSig, oldTS, oldBody, at), secrets(oldSecret), nil))
	r := zendeskRequest(b64MAC(sha256.New, oldSecret, oldTS+oldBody), oldTS, oldBody, at)
	wantVerified(t, adapter(t, "zendesk").Verify(r, secrets(oldSecret), nil))
}

func TestZendeskRejects(t *testing.T) {
	keys := secrets(zendeskDocSecret)
	good := func(body string, at time.Time) *Request {
		return zendeskRequest(zendeskDocSignature, zendeskDocTimestamp, body, at)
	}
	wantAllRejected(t, "zendesk", nil, []rejectCase{
		{"tampered body", good(zendeskDocBody+" ", received), keys},
		{"re-dated", zendeskRequest(zendeskDocSignature, "2025-03-14T09:26:51Z", zendeskDocBody, received), keys},
		{"wrong secret", good(zendeskDocBody, received), secrets("not-the-secret")},
		{"no secrets", good(zendeskDocBody, received), nil},
		{"stale timestamp", good(zendeskDocBody, received.Add(5*time.Minute-3*time.Second+time.Second)), keys},
		{"future timestamp", good(zendeskDocBody, received.Add(-5*time.Minute-4*time.Second)), keys},
		{"missing signature", zendeskRequest("", zendeskDocTimestamp, zendeskDocBody, received), keys},
		{"missing timestamp", zendeskRequest(zendeskDocSignature, "", zendeskDocBody, received), keys},
		{"timestamp in unix seconds", zendeskRequest(b64MAC(sha256.New, zendeskDocSecret, "1741944410"+zendeskDocBody), "1741944410", zendeskDocBody, received), keys},
		{"signature not base64", zendeskRequest("***", zendeskDocTimestamp, zendeskDocBody, received), keys},
	})
}

func TestZendeskToleranceIsConfigurable(t *testing.T) {
	r := zendeskRequest(zendeskDocSignature, zendeskDocTimestamp, zendeskDocBody, received.Add(time.Hour))
	wantRejected(t, adapter(t, "zendesk").Verify(r, secrets(zendeskDocSecret), nil))
	wantVerified(t, adapter(t, "zendesk").Verify(r, secrets(zendeskDocSecret), Config{"tolerance": "2h"}))
}

func TestZendeskInterpretsEventWebhook(t *testing.T) {
	ev := oneEvent(t, adapter(t, "zendesk"), zendeskRequest("", zendeskDocTimestamp, zendeskDocBody, received), nil)
	if ev.ProviderEventID != "2b24ef10-19d4-4740-93cf-8f98ec4776c0" || ev.Type != "zendesk.user.active_changed" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"zen:user:6596848315901"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2099, 7, 4, 5, 33, 18, 0, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != zendeskDocBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v)", ev.Data, ev.DataTruncated)
	}
}

func TestZendeskWritesOtherColonsAsDots(t *testing.T) {
	body := `{"type":"zen:other:thing.done","id":"e1"}`
	ev := oneEvent(t, adapter(t, "zendesk"), zendeskRequest("", zendeskDocTimestamp, body, received), nil)
	if ev.Type != "zendesk.zen.other.thing.done" {
		t.Fatalf("Type = %q", ev.Type)
	}
}

func TestZendeskInterpretsTriggerWebhookByInvocation(t *testing.T) {
	// A trigger sends the body its action defines: JSON, a form, or nothing.
	for _, body := range []string{`{"ticket":"Ticket 35436 has been updated."}`, "ticket=35436&status=open", ""} {
		ev := oneEvent(t, adapter(t, "zendesk"), zendeskRequest("", zendeskDocTimestamp, body, received), nil)
		if ev.ProviderEventID != "8350205582" || ev.Type != "zendesk.webhook" || ev.Kind != intake.KindEvent {
			t.Errorf("body %q: got id %q type %q kind %q", body, ev.ProviderEventID, ev.Type, ev.Kind)
		}
	}
}

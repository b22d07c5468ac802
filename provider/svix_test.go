package provider

import (
	"testing"
	"time"
)

// Svix's own libraries sign the same vector as Standard Webhooks, under
// svix-* headers: svix/svix-webhooks, php/tests/WebhookTest.php
// (testSignFunctionWorks) and the other language suites.
func svixRequest(name, id, ts, sig, body string) *Request {
	return &Request{
		Method:     "POST",
		Header:     headers("svix-id", id, "svix-timestamp", ts, "svix-signature", sig),
		Body:       []byte(body),
		ReceivedAt: swVectorReceivedAt(),
	}
}

func TestSvixCodesVerifyTheSvixLibraryVector(t *testing.T) {
	for _, name := range []string{"svix", "clerk", "resend"} {
		t.Run(name, func(t *testing.T) {
			r := svixRequest(name, swMsgID, swTimestamp, swSignature, swBody)
			wantVerified(t, adapter(t, name).Verify(r, secrets("whsec_dGhlIG9sZCBvbmU=", swSecret), nil))
			r.Body = []byte(`{"test": 2432232315}`)
			wantRejected(t, adapter(t, name).Verify(r, secrets(swSecret), nil))
		})
	}
}

func TestSvixCodesRejectStaleAndFutureTimestamps(t *testing.T) {
	for _, name := range []string{"svix", "clerk", "resend"} {
		r := svixRequest(name, swMsgID, swTimestamp, swSignature, swBody)
		r.ReceivedAt = time.Unix(1614265330, 0).Add(6 * time.Minute)
		wantRejected(t, adapter(t, name).Verify(r, secrets(swSecret), nil))
		r.ReceivedAt = time.Unix(1614265330, 0).Add(-6 * time.Minute)
		wantRejected(t, adapter(t, name).Verify(r, secrets(swSecret), nil))
		wantVerified(t, adapter(t, name).Verify(r, secrets(swSecret), Config{"tolerance": "7m"}))
	}
}

func TestClerkInterpretsUserCreated(t *testing.T) {
	// Shaped like the user.created example of https://clerk.com/docs/webhooks/overview;
	// Clerk's timestamp is in milliseconds.
	body := `{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user"},"object":"event",` +
		`"type":"user.created","timestamp":1654012591835,"instance_id":"ins_123"}`
	r := svixRequest("clerk", "msg_2", "1654012592", "", body)
	ev := oneEvent(t, adapter(t, "clerk"), r, nil)
	if ev.Type != "clerk.user.created" || ev.ProviderEventID != "msg_2" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"user_29w83sxmDNGwOuEthce5gg56FcC"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.UnixMilli(1654012591835).UTC(); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v, want %v", ev.OccurredAt, want)
	}
}

func TestResendInterpretsEmailEvent(t *testing.T) {
	// Shaped like https://resend.com/docs/dashboard/webhooks/event-types.
	body := `{"type":"email.delivered","created_at":"2024-02-22T23:41:12.126Z",` +
		`"data":{"created_at":"2024-02-22T23:41:11.894719+00:00","email_id":"56761188-7520-42d8-8898-ff6fc54ce618","to":["delivered@resend.dev"]}}`
	ev := oneEvent(t, adapter(t, "resend"), svixRequest("resend", "msg_3", "1708645272", "", body), nil)
	if ev.Type != "resend.email.delivered" || !equalStrings(ev.ObjectIDs, []string{"56761188-7520-42d8-8898-ff6fc54ce618"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
	if want := time.Date(2024, 2, 22, 23, 41, 12, 126000000, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

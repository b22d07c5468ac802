package provider

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Cal.com's own signer test, from calcom/cal.com,
// packages/features/webhooks/lib/sendPayload.test.ts (createWebhookSignature):
// the body {"test":"data"} under "my-secret". The test compares with Node's
// createHmac at run time; the hex below is that value. The booking is shaped
// like Cal.com's default body and signed the same way.
const (
	calcomSDKSecret    = "my-secret"
	calcomSDKBody      = `{"test":"data"}`
	calcomSDKSignature = "205249c7a241d234eb85edb88294e1da1eef0b5dad35e3bf8a19c7d33cbd9abf"
	calcomSecret       = "cal-webhook-secret"
	calcomBookingBody  = `{"triggerEvent":"BOOKING_CREATED","createdAt":"2025-03-14T09:26:50.538Z","payload":{"type":"30min","title":"30 Min Meeting between Pro Example and Jane","startTime":"2025-03-20T14:00:00Z","endTime":"2025-03-20T14:30:00Z","organizer":{"name":"Pro Example","email":"pro@example.com","timeZone":"Europe/London"},"attendees":[{"name":"Jane","email":"jane@example.com","timeZone":"America/New_York"}],"uid":"bFJeNb2uX8ANpT3JL5EfXw","bookingId":91,"status":"ACCEPTED"}}`
	calcomBookingSig   = "7d2213c70fd021b790858880a3a4ef0bc2e5cb525be6029b876dc305cbde9a16"
)

func calcomRequest(sig, body string) *Request { return post(body, "X-Cal-Signature-256", sig) }

func TestCalcomVerifiesSenderTestVector(t *testing.T) {
	wantVerified(t, adapter(t, "calcom").Verify(calcomRequest(calcomSDKSignature, calcomSDKBody), secrets(calcomSDKSecret), nil))
}

func TestCalcomVerifiesBookingAndRotatedSecret(t *testing.T) {
	r := calcomRequest(calcomBookingSig, calcomBookingBody)
	wantVerified(t, adapter(t, "calcom").Verify(r, secrets("the-old-secret", calcomSecret), nil))
}

func TestCalcomRejects(t *testing.T) {
	keys := secrets(calcomSecret)
	wantAllRejected(t, "calcom", nil, []rejectCase{
		{"tampered body", calcomRequest(calcomBookingSig, calcomBookingBody+" "), keys},
		{"wrong secret", calcomRequest(calcomBookingSig, calcomBookingBody), secrets(calcomSDKSecret)},
		{"no secrets", calcomRequest(calcomBookingSig, calcomBookingBody), nil},
		{"webhook without a secret", calcomRequest("no-secret-provided", calcomBookingBody), keys},
		{"missing header", calcomRequest("", calcomBookingBody), keys},
	})
}

func TestCalcomInterpretsBookingWithBuiltID(t *testing.T) {
	ev := oneEvent(t, adapter(t, "calcom"), calcomRequest("", calcomBookingBody), nil)
	if ev.ProviderEventID != "BOOKING_CREATED:bFJeNb2uX8ANpT3JL5EfXw:2025-03-14T09:26:50.538Z" ||
		ev.Type != "calcom.BOOKING_CREATED" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"bFJeNb2uX8ANpT3JL5EfXw"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2025, 3, 14, 9, 26, 50, 538000000, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != calcomBookingBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v)", ev.Data, ev.DataTruncated)
	}
}

func TestCalcomLinksRescheduleAndOutOfOffice(t *testing.T) {
	body := `{"triggerEvent":"BOOKING_RESCHEDULED","createdAt":"2025-03-14T09:26:50.538Z","payload":{"uid":"new","rescheduleUid":"old"}}`
	ev := oneEvent(t, adapter(t, "calcom"), calcomRequest("", body), nil)
	if !equalStrings(ev.ObjectIDs, []string{"new", "old"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	body = `{"triggerEvent":"OOO_CREATED","createdAt":"2024-01-01T00:00:00Z","payload":{"oooEntry":{"id":1,"uuid":"uuid-1"}}}`
	ev = oneEvent(t, adapter(t, "calcom"), calcomRequest("", body), nil)
	if ev.ProviderEventID != "OOO_CREATED:uuid-1:2024-01-01T00:00:00Z" || ev.Type != "calcom.OOO_CREATED" {
		t.Errorf("got id %q type %q", ev.ProviderEventID, ev.Type)
	}
}

func TestCalcomLeavesPingWithoutBookingToBodyDigest(t *testing.T) {
	body := `{"triggerEvent":"PING","createdAt":"2025-03-14T09:26:50.538Z","payload":{"type":"Test","title":"Test trigger event"}}`
	ev := oneEvent(t, adapter(t, "calcom"), calcomRequest("", body), nil)
	if ev.ProviderEventID != "" || ev.Type != "calcom.PING" {
		t.Fatalf("got id %q type %q", ev.ProviderEventID, ev.Type)
	}
}

func TestCalcomKeepsTemplatedBodies(t *testing.T) {
	// A payload template writes any JSON, or a form when it is not JSON.
	for _, body := range []string{`{"event":"BOOKING_CREATED","form":"form-1"}`, "event=BOOKING_CREATED"} {
		ev := oneEvent(t, adapter(t, "calcom"), calcomRequest("", body), nil)
		if ev.Type != "calcom.webhook" || ev.ProviderEventID != "" {
			t.Errorf("body %q: got type %q id %q", body, ev.Type, ev.ProviderEventID)
		}
	}
}

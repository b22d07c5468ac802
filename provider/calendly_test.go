package provider

import (
	"testing"
	"time"
)

// Calendly publishes no vector with its key; these requests are signed
// with a known signing key as
// https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures
// describes: Calendly-Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
const (
	calendlyKey  = "calendly-signing-key"
	calendlyBody = `{"created_at":"2020-11-23T17:51:19.000000Z","created_by":"https://api.calendly.com/users/AAAAAAAAAAAAAAAA",` +
		`"event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA",` +
		`"scheduled_event":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2"},"email":"test@example.com"}}`
)

func calendlySign(key, ts, body string) string {
	return "t=" + ts + ",v1=" + sha256Hex(key, ts+"."+body)
}

func calendlyRequest(sig, body string, at time.Time) *Request {
	r := post(body, "Calendly-Webhook-Signature", sig)
	r.ReceivedAt = at
	return r
}

func TestCalendlyVerifiesSignedDelivery(t *testing.T) {
	ts := unix(received)
	r := calendlyRequest(calendlySign(calendlyKey, ts, calendlyBody), calendlyBody, received.Add(2*time.Minute))
	wantVerified(t, adapter(t, "calendly").Verify(r, secrets("old key", calendlyKey), nil))
}

func TestCalendlyRejects(t *testing.T) {
	ts := unix(received)
	sig := calendlySign(calendlyKey, ts, calendlyBody)
	wantAllRejected(t, "calendly", nil, []rejectCase{
		{"tampered body", calendlyRequest(sig, calendlyBody+" ", received), secrets(calendlyKey)},
		{"wrong key", calendlyRequest(sig, calendlyBody, received), secrets("other")},
		{"no secrets", calendlyRequest(sig, calendlyBody, received), nil},
		{"missing header", calendlyRequest("", calendlyBody, received), secrets(calendlyKey)},
		{"stale beyond three minutes", calendlyRequest(sig, calendlyBody, received.Add(3*time.Minute+time.Second)), secrets(calendlyKey)},
		{"no v1", calendlyRequest("t="+ts, calendlyBody, received), secrets(calendlyKey)},
		{"timestamp not a number", calendlyRequest(calendlySign(calendlyKey, "now", calendlyBody), calendlyBody, received), secrets(calendlyKey)},
	})
}

func TestCalendlyBoundsOnlyTheAge(t *testing.T) {
	r := calendlyRequest(calendlySign(calendlyKey, unix(received), calendlyBody), calendlyBody, received.Add(-time.Hour))
	wantVerified(t, adapter(t, "calendly").Verify(r, secrets(calendlyKey), nil))
}

func TestCalendlyInterpretsInviteeCreatedWithBuiltID(t *testing.T) {
	ev := oneEvent(t, adapter(t, "calendly"), calendlyRequest("", calendlyBody, received), nil)
	uri := "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA"
	if ev.Type != "calendly.invitee.created" || ev.ProviderEventID != "invitee.created:"+uri+":2020-11-23T17:51:19.000000Z" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{uri, "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}

package provider

import (
	"testing"
	"time"
)

// PagerDuty publishes no vector with its secret; these requests are signed
// with known secrets as https://developer.pagerduty.com/docs/webhooks/webhook-signatures/
// describes: X-PagerDuty-Signature lists v1=<hex HMAC-SHA256 of the body>,
// one per active secret.
const (
	pdSecret = "pagerduty-v3-secret"
	pdBody   = `{"event":{"id":"01BZ2R9M4B8Q5J2K","event_type":"incident.triggered","resource_type":"incident",` +
		`"occurred_at":"2020-10-02T18:45:22.169Z","agent":null,"client":null,"data":{"id":"PGR0VU2","type":"incident","title":"A little bump"}}}`
)

func pdRequest(sig string) *Request { return post(pdBody, "X-PagerDuty-Signature", sig) }

func TestPagerDutyVerifiesAnyOfSeveralSignatures(t *testing.T) {
	sig := "v1=" + sha256Hex("a secret being rotated out", pdBody) + ",v1=" + sha256Hex(pdSecret, pdBody)
	wantVerified(t, adapter(t, "pagerduty").Verify(pdRequest(sig), secrets(pdSecret), nil))
	wantVerified(t, adapter(t, "pagerduty").Verify(pdRequest("v1="+sha256Hex(pdSecret, pdBody)), secrets("retired", pdSecret), nil))
}

func TestPagerDutyRejects(t *testing.T) {
	sig := "v1=" + sha256Hex(pdSecret, pdBody)
	tampered := pdRequest(sig)
	tampered.Body = []byte(pdBody + " ")
	wantAllRejected(t, "pagerduty", nil, []rejectCase{
		{"tampered body", tampered, secrets(pdSecret)},
		{"wrong secret", pdRequest(sig), secrets("other")},
		{"no secrets", pdRequest(sig), nil},
		{"missing header", pdRequest(""), secrets(pdSecret)},
		{"unknown version", pdRequest("v2=" + sig[3:]), secrets(pdSecret)},
		{"bare hex", pdRequest(sig[3:]), secrets(pdSecret)},
	})
}

func TestPagerDutyInterpretsIncidentTriggered(t *testing.T) {
	ev := oneEvent(t, adapter(t, "pagerduty"), pdRequest(""), nil)
	if ev.Type != "pagerduty.incident.triggered" || ev.ProviderEventID != "01BZ2R9M4B8Q5J2K" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"PGR0VU2"}) || !ev.OccurredAt.Equal(time.Date(2020, 10, 2, 18, 45, 22, 169000000, time.UTC)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
}

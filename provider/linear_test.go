package provider

import (
	"strconv"
	"testing"
	"time"
)

// Linear publishes no vector with its secret; these requests are signed
// with a known secret as https://linear.app/developers/webhooks describes:
// Linear-Signature is the hex HMAC-SHA256 of the body, and the body's
// webhookTimestamp (ms) must be within a minute of receipt.
const linearSecret = "lin_wh_0123456789abcdef"

func linearBody(at time.Time) string {
	return `{"action":"create","type":"Issue","createdAt":"2025-03-14T09:26:50.123Z","organizationId":"org1",` +
		`"data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","identifier":"ENG-42","title":"Crash"},` +
		`"url":"https://linear.app/acme/issue/ENG-42","webhookId":"wh1","webhookTimestamp":` + strconv.FormatInt(at.UnixMilli(), 10) + `}`
}

func linearRequest(sig, body string) *Request {
	return post(body, "Linear-Signature", sig, "Linear-Delivery", "234d1a4e-b617-4388-90fe-adc3633d6b72", "Linear-Event", "Issue")
}

func TestLinearVerifiesSignedDeliveryWithinAMinute(t *testing.T) {
	for _, skew := range []time.Duration{0, 59 * time.Second, -59 * time.Second} {
		body := linearBody(received.Add(skew))
		wantVerified(t, adapter(t, "linear").Verify(linearRequest(sha256Hex(linearSecret, body), body), secrets("old", linearSecret), nil))
	}
}

func TestLinearRejects(t *testing.T) {
	body := linearBody(received)
	sig := sha256Hex(linearSecret, body)
	stale := linearBody(received.Add(-61 * time.Second))
	future := linearBody(received.Add(61 * time.Second))
	noTS := `{"action":"create","type":"Issue","data":{"id":"x"}}`
	wantAllRejected(t, "linear", nil, []rejectCase{
		{"tampered body", linearRequest(sig, body[:len(body)-2]+"1}"), secrets(linearSecret)},
		{"wrong secret", linearRequest(sig, body), secrets("other")},
		{"no secrets", linearRequest(sig, body), nil},
		{"missing header", linearRequest("", body), secrets(linearSecret)},
		{"stale timestamp", linearRequest(sha256Hex(linearSecret, stale), stale), secrets(linearSecret)},
		{"future timestamp", linearRequest(sha256Hex(linearSecret, future), future), secrets(linearSecret)},
		{"no timestamp in body", linearRequest(sha256Hex(linearSecret, noTS), noTS), secrets(linearSecret)},
	})
}

func TestLinearToleranceIsConfigurable(t *testing.T) {
	body := linearBody(received.Add(-4 * time.Minute))
	r := linearRequest(sha256Hex(linearSecret, body), body)
	wantRejected(t, adapter(t, "linear").Verify(r, secrets(linearSecret), nil))
	wantVerified(t, adapter(t, "linear").Verify(r, secrets(linearSecret), Config{"tolerance": "5m"}))
}

func TestLinearNamesTheChangeNotTheDelivery(t *testing.T) {
	// A retry carries a fresh webhookTimestamp (and perhaps a fresh
	// delivery id); the change it reports keeps its identity.
	first := oneEvent(t, adapter(t, "linear"), linearRequest("", linearBody(received)), nil)
	retry := linearRequest("", linearBody(received.Add(time.Minute)))
	retry.Header.Set("Linear-Delivery", "another-delivery")
	again := oneEvent(t, adapter(t, "linear"), retry, nil)
	if first.ProviderEventID != again.ProviderEventID || first.ProviderEventID == "" {
		t.Fatalf("ids %q and %q", first.ProviderEventID, again.ProviderEventID)
	}
	if first.Type != "linear.Issue.create" || !equalStrings(first.ObjectIDs, []string{"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", "ENG-42"}) {
		t.Errorf("got type %q objects %v", first.Type, first.ObjectIDs)
	}
	if !first.OccurredAt.Equal(time.Date(2025, 3, 14, 9, 26, 50, 123000000, time.UTC)) {
		t.Errorf("OccurredAt = %v", first.OccurredAt)
	}
}

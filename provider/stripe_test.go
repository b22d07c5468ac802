package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Stripe publishes no secret/payload/signature triple, so these requests are
// signed with a known secret by the documented scheme
// (https://docs.stripe.com/webhooks#verify-manually): HMAC-SHA256, keyed
// with the whole whsec_ string, of "{t}.{body}", hex-encoded, sent as
// "t=<t>,v1=<hex>" and possibly further v1 and v0 elements.
const (
	stripeSecret = "whsec_7d2f3cbb0e3b4a1c9f8e6d5c4b3a2918"
	stripeBody   = `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","created":1686089970,"type":"invoice.paid","data":{"object":{"id":"in_1NG8Dt2eZvKYlo2C1Q6pSvKX","object":"invoice","customer":"cus_O2Cz"}}}`
)

func stripeRequest(header, body string, at time.Time) *Request {
	return &Request{Method: "POST", Header: headers("Stripe-Signature", header), Body: []byte(body), ReceivedAt: at}
}

func stripeHeader(secret string, signedAt time.Time, body string) string {
	ts := unix(signedAt)
	return "t=" + ts + ",v1=" + sha256Hex(secret, ts+"."+body)
}

func TestStripeVerifiesDocumentedScheme(t *testing.T) {
	signedAt := received.Add(-2 * time.Second)
	// The same signature computed by hand from the documented recipe, so a
	// shared mistake in the test signer cannot hide one in the adapter.
	ts := unix(signedAt)
	want := sha256Hex(stripeSecret, ts, ".", stripeBody)
	header := "t=" + ts + ",v1=" + want + ",v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"
	wantVerified(t, adapter(t, "stripe").Verify(stripeRequest(header, stripeBody, received), secrets(stripeSecret), nil))
}

func TestStripeParsesDocumentedHeaderExample(t *testing.T) {
	// The example header of https://docs.stripe.com/webhooks#verify-manually.
	ts, sigs, ok := parseStripeSignature("t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39")
	if !ok || ts != "1492774577" || len(sigs) != 1 || len(sigs[0]) != 32 {
		t.Fatalf("got ts %q, %d v1 signatures, ok %v", ts, len(sigs), ok)
	}
}

func TestStripeAcceptsAnyOfSeveralV1Signatures(t *testing.T) {
	ts := unix(received)
	header := "t=" + ts + ",v1=" + sha256Hex("whsec_other", ts+"."+stripeBody) + ",v1=" + sha256Hex(stripeSecret, ts+"."+stripeBody)
	wantVerified(t, adapter(t, "stripe").Verify(stripeRequest(header, stripeBody, received), secrets(stripeSecret), nil))
}

func TestStripeAcceptsRotatedSecrets(t *testing.T) {
	header := stripeHeader(stripeSecret, received, stripeBody)
	wantVerified(t, adapter(t, "stripe").Verify(stripeRequest(header, stripeBody, received), secrets("whsec_retired", stripeSecret), nil))
}

func TestStripeUsesWholeSecretAsKey(t *testing.T) {
	// A key decoded from after the prefix must not verify.
	header := stripeHeader(strings.TrimPrefix(stripeSecret, "whsec_"), received, stripeBody)
	wantRejected(t, adapter(t, "stripe").Verify(stripeRequest(header, stripeBody, received), secrets(stripeSecret), nil))
}

func TestStripeRejects(t *testing.T) {
	good := stripeHeader(stripeSecret, received, stripeBody)
	ts := unix(received)
	cases := []struct {
		name, header, body string
		at                 time.Time
		secrets            [][]byte
	}{
		{"tampered body", good, strings.Replace(stripeBody, "invoice.paid", "invoice.voided", 1), received, secrets(stripeSecret)},
		{"wrong secret", good, stripeBody, received, secrets("whsec_wrong")},
		{"no secrets", good, stripeBody, received, nil},
		{"empty secret", stripeHeader("", received, stripeBody), stripeBody, received, secrets("")},
		{"stale timestamp", good, stripeBody, received.Add(301 * time.Second), secrets(stripeSecret)},
		{"missing header", "", stripeBody, received, secrets(stripeSecret)},
		{"no timestamp", strings.SplitN(good, ",", 2)[1], stripeBody, received, secrets(stripeSecret)},
		{"two timestamps", good + ",t=" + ts, stripeBody, received, secrets(stripeSecret)},
		{"only v0", strings.Replace(good, "v1=", "v0=", 1), stripeBody, received, secrets(stripeSecret)},
		{"signature not hex", "t=" + ts + ",v1=zz", stripeBody, received, secrets(stripeSecret)},
		{"re-signed timestamp", "t=" + unix(received.Add(time.Second)) + good[strings.Index(good, ","):], stripeBody, received, secrets(stripeSecret)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, "stripe").Verify(stripeRequest(c.header, c.body, c.at), c.secrets, nil))
		})
	}
}

// As Stripe's libraries (stripe-go's validatePayload, stripe-node's
// verifyHeader), only the age is judged.
func TestStripeAcceptsASigningTimeAheadOfReceipt(t *testing.T) {
	r := stripeRequest(stripeHeader(stripeSecret, received, stripeBody), stripeBody, received.Add(-time.Hour))
	wantVerified(t, adapter(t, "stripe").Verify(r, secrets(stripeSecret), nil))
}

func TestStripeVerifiesOldMessageAtItsReceivedTime(t *testing.T) {
	signedAt := time.Date(2023, 6, 6, 22, 19, 30, 0, time.UTC)
	r := stripeRequest(stripeHeader(stripeSecret, signedAt, stripeBody), stripeBody, signedAt.Add(time.Minute))
	wantVerified(t, adapter(t, "stripe").Verify(r, secrets(stripeSecret), nil))
}

func TestStripeToleranceIsConfigurable(t *testing.T) {
	r := stripeRequest(stripeHeader(stripeSecret, received, stripeBody), stripeBody, received.Add(20*time.Minute))
	a := adapter(t, "stripe")
	wantRejected(t, a.Verify(r, secrets(stripeSecret), nil))
	wantVerified(t, a.Verify(r, secrets(stripeSecret), Config{"tolerance": "30m"}))
}

func TestStripeInterpretsEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "stripe"), &Request{Body: []byte(stripeBody)}, nil)
	if ev.ProviderEventID != "evt_1NG8Du2eZvKYlo2CUI79vXWy" || ev.Type != "stripe.invoice.paid" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Unix(1686089970, 0)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if !equalStrings(ev.ObjectIDs, []string{"in_1NG8Dt2eZvKYlo2C1Q6pSvKX"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if string(ev.Data) != stripeBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v), want the body", ev.Data, ev.DataTruncated)
	}
}

func TestStripeInterpretsThinEvent(t *testing.T) {
	body := `{"id":"evt_test_65R9","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_test_61R9","type":"billing.meter"}}`
	ev := oneEvent(t, adapter(t, "stripe"), &Request{Body: []byte(body)}, nil)
	if ev.Type != "stripe.v1.billing.meter.error_report_triggered" || !equalStrings(ev.ObjectIDs, []string{"mtr_test_61R9"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
	if ev.OccurredAt.IsZero() {
		t.Error("OccurredAt not read from the RFC 3339 created")
	}
}

func TestStripeRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"not json", `{"id":"evt_1"}`, `{"type":7}`, "[]"} {
		_, err := adapter(t, "stripe").Interpret(&Request{Body: []byte(body)}, nil)
		wantPermanent(t, err)
	}
}

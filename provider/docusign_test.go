package provider

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// DocuSign publishes no signed example; dsBody is a JSON (SIM) Connect
// message of the shape its Connect guide shows, signed as the HMAC guide
// says: base64 HMAC-SHA256 of the body under each active key, one
// X-DocuSign-Signature-N header per key.
const (
	dsKey1 = "nDUwEnOEvXIAh5zOfu3NDFFHKvzHrPSiHbF6Ah0Ddq8="
	dsKey2 = "6pkfHaMpwbBS6LrbX2Kq7o1Cfj9LUX1F2D1C0U7+HqE="
	dsBody = `{"event":"envelope-completed","apiVersion":"v2.1","uri":"/restapi/v2.1/accounts/fd9dc5bd-c2a6-4a58-9b68-34fe8bbd6c84/envelopes/cf1ea23e-79c7-4a2b-9a73-8cb4b3f7e2c1",` +
		`"retryCount":0,"configurationId":10418,"generatedDateTime":"2025-03-14T09:26:50.4710000Z","data":{"accountId":"fd9dc5bd-c2a6-4a58-9b68-34fe8bbd6c84",` +
		`"userId":"d2b1c0a4-6d8b-4f5e-9d0c-2c8b4b6a9f31","envelopeId":"cf1ea23e-79c7-4a2b-9a73-8cb4b3f7e2c1"}}`
)

func dsRequest(body string, keys ...string) *Request {
	r := post(body)
	for i, k := range keys {
		r.Header.Set("X-DocuSign-Signature-"+itoa64(int64(i+1)), b64MAC(sha256.New, k, body))
	}
	return r
}

func TestDocuSignVerifiesAnySignatureWithAnySecret(t *testing.T) {
	wantVerified(t, adapter(t, "docusign").Verify(dsRequest(dsBody, dsKey1), secrets(dsKey1), nil))
	// Two active keys: DocuSign signs with both; the connection may hold
	// either, or an older one beside it.
	wantVerified(t, adapter(t, "docusign").Verify(dsRequest(dsBody, dsKey1, dsKey2), secrets(dsKey2), nil))
	wantVerified(t, adapter(t, "docusign").Verify(dsRequest(dsBody, dsKey1, dsKey2), secrets("retired", dsKey1), nil))
	// Stored headers may keep any case.
	r := post(dsBody)
	r.Header = http.Header{"x-docusign-signature-12": {b64MAC(sha256.New, dsKey2, dsBody)}}
	wantVerified(t, adapter(t, "docusign").Verify(r, secrets(dsKey2), nil))
}

func TestDocuSignRejects(t *testing.T) {
	noNumber := post(dsBody, "X-DocuSign-Signature", b64MAC(sha256.New, dsKey1, dsBody))
	zero := post(dsBody, "X-DocuSign-Signature-0", b64MAC(sha256.New, dsKey1, dsBody))
	tampered := dsRequest(dsBody, dsKey1)
	tampered.Body = []byte(strings.Replace(dsBody, "envelope-completed", "envelope-completeD", 1))
	wantAllRejected(t, "docusign", nil, []rejectCase{
		{"body changed by one byte", tampered, secrets(dsKey1)},
		{"wrong secret", dsRequest(dsBody, dsKey1, dsKey2), secrets("another-key")},
		{"no secrets", dsRequest(dsBody, dsKey1), nil},
		{"empty secret", dsRequest(dsBody, ""), secrets("")},
		{"missing header", post(dsBody), secrets(dsKey1)},
		{"header without a number", noNumber, secrets(dsKey1)},
		{"header numbered 0", zero, secrets(dsKey1)},
		{"signature not base64", post(dsBody, "X-DocuSign-Signature-1", "***"), secrets(dsKey1)},
	})
}

func TestDocuSignInterpretsTheMessage(t *testing.T) {
	ev := oneEvent(t, adapter(t, "docusign"), post(dsBody), nil)
	if ev.ProviderEventID != "envelope-completed:cf1ea23e-79c7-4a2b-9a73-8cb4b3f7e2c1:2025-03-14T09:26:50.4710000Z" ||
		ev.Type != "docusign.envelope-completed" || ev.Kind != intake.KindEvent {
		t.Fatalf("id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"cf1ea23e-79c7-4a2b-9a73-8cb4b3f7e2c1"}) || ev.OccurredAt.IsZero() || string(ev.Data) != dsBody {
		t.Errorf("ObjectIDs %v OccurredAt %v Data %s", ev.ObjectIDs, ev.OccurredAt, ev.Data)
	}
	// A retry names the same event.
	retry := oneEvent(t, adapter(t, "docusign"), post(strings.Replace(dsBody, `"retryCount":0`, `"retryCount":3`, 1)), nil)
	if retry.ProviderEventID != ev.ProviderEventID {
		t.Errorf("retry id %q, want %q", retry.ProviderEventID, ev.ProviderEventID)
	}
	// A recipient event names its recipient.
	rcpt := strings.Replace(strings.Replace(dsBody, "envelope-completed", "recipient-completed", 1), `"envelopeId"`, `"recipientId":"2","envelopeId"`, 1)
	if ev := oneEvent(t, adapter(t, "docusign"), post(rcpt), nil); !strings.HasSuffix(ev.ProviderEventID, ":2") || ev.Type != "docusign.recipient-completed" {
		t.Errorf("recipient event: id %q type %q", ev.ProviderEventID, ev.Type)
	}
}

func TestDocuSignKeepsALegacyXMLMessageWhole(t *testing.T) {
	ev := oneEvent(t, adapter(t, "docusign"), post(`<?xml version="1.0" encoding="utf-8"?><DocuSignEnvelopeInformation/>`), nil)
	if ev.Type != "docusign.xml" || ev.ProviderEventID != "" || !ev.DataTruncated {
		t.Errorf("%+v", ev)
	}
}

func TestDocuSignRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"data":{}}`, "[]"} {
		_, err := adapter(t, "docusign").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

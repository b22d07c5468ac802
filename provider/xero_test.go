package provider

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Xero's SDKs ship no webhook verifier and its documentation no signed
// example. The bodies are the shapes its webhooks guide shows (an event
// payload, and the intent to receive with no events), signed as it
// describes: base64 HMAC-SHA256 of the body under the webhook key as
// written.
const (
	xeroKey       = "OSd0eLlVIY9ZhViEqlDUh4+6n6M+Lo+eDaEJheJ6OCCgWwIz2D3JIAU6jPMipHRbgKTLz2uJ+xiACXGDBLrgdA=="
	xeroITRBody   = `{"events":[],"firstEventSequence":0,"lastEventSequence":0,"entropy":"FMLHZNKCVK"}`
	xeroEventBody = `{"events":[{"resourceUrl":"https://api.xero.com/api.xro/2.0/Contacts/717f2bfc-c6d4-41fd-b238-3f2f0c0cf777",` +
		`"resourceId":"717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE",` +
		`"eventCategory":"CONTACT","tenantId":"c2cc9b6e-9458-4c7d-93cc-f02b81b0594f","tenantType":"ORGANISATION"}],` +
		`"lastEventSequence":1,"firstEventSequence":1,"entropy":"S0m3r4Nd0mt3xt"}`
)

func xeroRequest(key, body string) *Request {
	return post(body, "x-xero-signature", b64MAC(sha256.New, key, body))
}

func TestXeroVerifiesBodySignature(t *testing.T) {
	wantVerified(t, adapter(t, "xero").Verify(xeroRequest(xeroKey, xeroEventBody), secrets(xeroKey), nil))
	wantVerified(t, adapter(t, "xero").Verify(xeroRequest(xeroKey, xeroITRBody), secrets("retired-key", xeroKey), nil))
}

func TestXeroRejects(t *testing.T) {
	good := xeroRequest(xeroKey, xeroEventBody)
	tampered := xeroRequest(xeroKey, xeroEventBody)
	tampered.Body = []byte(strings.Replace(xeroEventBody, "UPDATE", "CREATE", 1))
	missing := xeroRequest(xeroKey, xeroEventBody)
	missing.Header.Del("x-xero-signature")
	wantAllRejected(t, "xero", nil, []rejectCase{
		{"body changed by one byte", tampered, secrets(xeroKey)},
		{"wrong key", good, secrets("another-webhook-key")},
		{"no secrets", good, nil},
		{"empty secret", xeroRequest("", xeroEventBody), secrets("")},
		{"missing header", missing, secrets(xeroKey)},
		{"signature not base64", post(xeroEventBody, "x-xero-signature", "not base64!"), secrets(xeroKey)},
	})
}

func TestXeroIntentToReceiveAnswers401UnlessSignedAnd200WhenSigned(t *testing.T) {
	ch := adapter(t, "xero").(Challenger)
	c, ok := ch.Challenge(xeroRequest(xeroKey, xeroITRBody), secrets(xeroKey), nil)
	if !ok || c.Status != http.StatusOK || len(c.Body) != 0 {
		t.Fatalf("signed intent to receive: %+v, %v; want 200 with no body", c, ok)
	}
	for name, r := range map[string]*Request{
		"wrong signature": xeroRequest("not-the-key", xeroITRBody),
		"no signature":    post(xeroITRBody),
	} {
		c, ok := ch.Challenge(r, secrets(xeroKey), nil)
		if !ok || c.Status != http.StatusUnauthorized {
			t.Errorf("%s: %+v, %v; want 401", name, c, ok)
		}
	}
	// No secrets (the connection could not be read): still 401, never 200.
	if c, _ := ch.Challenge(xeroRequest(xeroKey, xeroITRBody), nil, nil); c.Status != http.StatusUnauthorized {
		t.Errorf("without secrets: %d, want 401", c.Status)
	}
	// A signed delivery is answered 200 too; an unsigned one 401.
	if c, _ := ch.Challenge(xeroRequest(xeroKey, xeroEventBody), secrets(xeroKey), nil); c.Status != http.StatusOK {
		t.Errorf("signed delivery: %d", c.Status)
	}
	if c, _ := ch.Challenge(xeroRequest("nope", xeroEventBody), secrets(xeroKey), nil); c.Status != http.StatusUnauthorized {
		t.Errorf("unsigned delivery: %d", c.Status)
	}
}

func TestXeroIntentToReceiveSettlesAsAChallenge(t *testing.T) {
	for _, body := range []string{xeroITRBody, `{"events":null,"firstEventSequence":0,"lastEventSequence":0,"entropy":"X"}`} {
		in, err := adapter(t, "xero").Interpret(post(body), nil)
		if err != nil || !in.Challenge || len(in.Events) != 0 {
			t.Errorf("%s: %+v, %v; want a challenge with no events", body, in, err)
		}
	}
}

func TestXeroInterpretsOneEventPerItem(t *testing.T) {
	in, err := adapter(t, "xero").Interpret(post(xeroEventBody), nil)
	if err != nil || len(in.Events) != 1 || in.Challenge {
		t.Fatalf("%+v, %v", in, err)
	}
	ev := in.Events[0]
	want := "c2cc9b6e-9458-4c7d-93cc-f02b81b0594f:CONTACT:UPDATE:717f2bfc-c6d4-41fd-b238-3f2f0c0cf777:2017-06-21T01:15:39.902"
	if ev.ProviderEventID != want || ev.Type != "xero.CONTACT.UPDATE" || ev.Kind != intake.KindEvent {
		t.Errorf("id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"717f2bfc-c6d4-41fd-b238-3f2f0c0cf777", "c2cc9b6e-9458-4c7d-93cc-f02b81b0594f"}) ||
		ev.OccurredAt.Format("2006-01-02T15:04:05.000Z07:00") != "2017-06-21T01:15:39.902Z" {
		t.Errorf("ObjectIDs %v OccurredAt %v", ev.ObjectIDs, ev.OccurredAt)
	}
	// The entropy, which changes on every send, is not part of any event.
	if strings.Contains(string(ev.Data), "entropy") {
		t.Errorf("Data = %s", ev.Data)
	}
}

func TestXeroNamesEveryEventOfABatchPastTheMaximum(t *testing.T) {
	items := make([]string, intake.MaxEventsPerMessage+1)
	for i := range items {
		items[i] = fmt.Sprintf(`{"resourceId":"r%d","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"CREATE","eventCategory":"INVOICE","tenantId":"t"}`, i)
	}
	in, err := adapter(t, "xero").Interpret(post(`{"events":[`+strings.Join(items, ",")+`]}`), nil)
	if err != nil || len(in.Events) != intake.MaxEventsPerMessage+1 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestXeroRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"events":{}}`, `{"events":[{"resourceId":"r"}]}`, "[]"} {
		_, err := adapter(t, "xero").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

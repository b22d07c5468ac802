package provider

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// SDK vector, from intuit/QuickBooks-V3-Java-SDK,
// ipp-v3-java-devkit/src/test/java/com/intuit/ipp/services/WebhooksServiceTest.java:
// the verifier token, payload and intuit-signature below verify, and its
// signature "1234" is refused. qbCloudEvents is that test's CloudEvents
// payload. qbBody, two entities of one company as Intuit's webhooks guide
// shows, is signed here as the guide says.
const (
	qbSDKToken = "b5771f19b12ddb4bcdb9f08bdc50bc63878a"
	qbSDKSig   = "JC2GUwciPmRBwEO7WvrRmKqu9tGOKL8FFallocTFi8Q="
	qbSDKBody  = `{"eventNotifications":[{"realmId":"1185883450","dataChangeEvent":{"entities":[{"name":"Customer","id":"1","operation":"Create","lastUpdated":"2015-10-05T14:42:19-0700"}]}}]}`

	qbToken = "a8c2c9d7-5b0d-4d0e-9f4f-3b1f0b8c9a11"
	qbBody  = `{"eventNotifications":[{"realmId":"1185883450","dataChangeEvent":{"entities":[` +
		`{"name":"Customer","id":"1","operation":"Create","lastUpdated":"2015-10-05T14:42:19-0700"},` +
		`{"name":"Vendor","id":"1","operation":"Create","lastUpdated":"2015-10-05T14:42:19-0700"}]}}]}`
	qbCloudEvents = `[{"specversion":"1.0","id":"d1a3aedd-9670-41bf-a4f9-c148a1cc4e03","source":"intuit.dsnBgbseACLLRZNxo2dfc4evmEJdxde58xeeYcZliOU=",` +
		`"type":"qbo.class.created.v1","time":"2025-10-07T19:59:07.034359333Z","intuitentityid":"1234","intuitaccountid":"310687"}]`
)

func TestQuickBooksVerifiesSDKVector(t *testing.T) {
	wantVerified(t, adapter(t, "quickbooks").Verify(post(qbSDKBody, "intuit-signature", qbSDKSig), secrets(qbSDKToken), nil))
	wantRejected(t, adapter(t, "quickbooks").Verify(post(qbSDKBody, "intuit-signature", "1234"), secrets(qbSDKToken), nil))
}

func qbRequest(token, body string) *Request {
	return post(body, "intuit-signature", b64MAC(sha256.New, token, body))
}

func TestQuickBooksVerifiesBodySignature(t *testing.T) {
	wantVerified(t, adapter(t, "quickbooks").Verify(qbRequest(qbToken, qbBody), secrets(qbToken), nil))
	wantVerified(t, adapter(t, "quickbooks").Verify(qbRequest(qbToken, qbBody), secrets("old-token", qbToken), nil))
}

func TestQuickBooksRejects(t *testing.T) {
	good := qbRequest(qbToken, qbBody)
	tampered := qbRequest(qbToken, qbBody)
	tampered.Body = []byte(strings.Replace(qbBody, `"id":"1"`, `"id":"2"`, 1))
	missing := qbRequest(qbToken, qbBody)
	missing.Header.Del("intuit-signature")
	wantAllRejected(t, "quickbooks", nil, []rejectCase{
		{"body changed by one byte", tampered, secrets(qbToken)},
		{"wrong token", good, secrets("another-token")},
		{"no secrets", good, nil},
		{"empty secret", qbRequest("", qbBody), secrets("")},
		{"missing header", missing, secrets(qbToken)},
		{"signature not base64", post(qbBody, "intuit-signature", "%%%"), secrets(qbToken)},
	})
}

func TestQuickBooksInterpretsOneEventPerEntity(t *testing.T) {
	in, err := adapter(t, "quickbooks").Interpret(post(qbBody), nil)
	if err != nil || len(in.Events) != 2 || in.EventType != "quickbooks.batch" {
		t.Fatalf("%+v, %v", in, err)
	}
	for i, want := range []struct{ id, typ string }{
		{"1185883450:Customer:1:Create:2015-10-05T14:42:19-0700", "quickbooks.Customer.Create"},
		{"1185883450:Vendor:1:Create:2015-10-05T14:42:19-0700", "quickbooks.Vendor.Create"},
	} {
		ev := in.Events[i]
		if ev.ProviderEventID != want.id || ev.Type != want.typ || ev.Kind != intake.KindEvent {
			t.Errorf("event %d: id %q type %q", i, ev.ProviderEventID, ev.Type)
		}
		if !equalStrings(ev.ObjectIDs, []string{"1", "1185883450"}) || ev.OccurredAt.Format("2006-01-02T15:04:05Z07:00") != "2015-10-05T21:42:19Z" {
			t.Errorf("event %d: ObjectIDs %v OccurredAt %v", i, ev.ObjectIDs, ev.OccurredAt)
		}
		if !strings.Contains(string(ev.Data), `"realmId":"1185883450"`) {
			t.Errorf("event %d: Data %s lacks the company", i, ev.Data)
		}
	}
}

func TestQuickBooksReadsCloudEvents(t *testing.T) {
	in, err := adapter(t, "quickbooks").Interpret(post(qbCloudEvents), nil)
	if err != nil || len(in.Events) != 1 {
		t.Fatalf("%+v, %v", in, err)
	}
	ev := in.Events[0]
	if ev.ProviderEventID != "d1a3aedd-9670-41bf-a4f9-c148a1cc4e03" || ev.Type != "quickbooks.qbo.class.created.v1" ||
		!equalStrings(ev.ObjectIDs, []string{"1234", "310687"}) || ev.OccurredAt.IsZero() {
		t.Errorf("%+v", ev)
	}
}

func TestQuickBooksNamesEveryEntityOfABatchPastTheMaximum(t *testing.T) {
	items := make([]string, intake.MaxEventsPerMessage+1)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"Invoice","id":"%d","operation":"Update","lastUpdated":"2015-10-05T14:42:19-0700"}`, i)
	}
	body := `{"eventNotifications":[{"realmId":"1","dataChangeEvent":{"entities":[` + strings.Join(items, ",") + `]}}]}`
	in, err := adapter(t, "quickbooks").Interpret(post(body), nil)
	if err != nil || len(in.Events) != intake.MaxEventsPerMessage+1 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestQuickBooksRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"x":1}`, `{"eventNotifications":[{"realmId":"1","dataChangeEvent":{"entities":[{"id":"1"}]}}]}`, `[{"id":"1"}]`} {
		_, err := adapter(t, "quickbooks").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"encoding/base64"
	"testing"
	"time"
)

// Postmark authenticates by basic auth; these requests carry known
// credentials as https://postmarkapp.com/developer/webhooks/webhooks-overview
// describes (credentials in the webhook URL become the Authorization header).
const postmarkCreds = "intake:c0rrect-h0rse"

func basicAuth(creds string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(creds))
}

func TestPostmarkAcceptsItsBasicAuthCredentials(t *testing.T) {
	r := post(`{}`, "Authorization", basicAuth(postmarkCreds))
	wantVerified(t, adapter(t, "postmark").Verify(r, secrets("intake:old-password", postmarkCreds), nil))
	lower := post(`{}`, "Authorization", "basic "+base64.StdEncoding.EncodeToString([]byte(postmarkCreds)))
	wantVerified(t, adapter(t, "postmark").Verify(lower, secrets(postmarkCreds), nil))
}

func TestPostmarkRejects(t *testing.T) {
	wantAllRejected(t, "postmark", nil, []rejectCase{
		{"wrong password", post(`{}`, "Authorization", basicAuth("intake:guess")), secrets(postmarkCreds)},
		{"wrong user", post(`{}`, "Authorization", basicAuth("admin:c0rrect-h0rse")), secrets(postmarkCreds)},
		{"no secrets", post(`{}`, "Authorization", basicAuth(postmarkCreds)), nil},
		{"missing header", post(`{}`), secrets(postmarkCreds)},
		{"bearer scheme", post(`{}`, "Authorization", "Bearer "+postmarkCreds), secrets(postmarkCreds)},
		{"not base64", post(`{}`, "Authorization", "Basic ***"), secrets(postmarkCreds)},
		{"no colon", post(`{}`, "Authorization", basicAuth("intake")), secrets("intake")},
	})
}

func TestPostmarkInterpretsRecordTypes(t *testing.T) {
	// Shaped like the examples of https://postmarkapp.com/developer/webhooks/.
	cases := []struct {
		body, typ, id string
		at            time.Time
	}{
		{`{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483",` +
			`"Recipient":"john@example.com","Tag":"welcome-email","DeliveredAt":"2014-08-01T13:28:10.2735393-04:00","Details":"Test delivery webhook details"}`,
			"postmark.delivery", "Delivery:883953f4-6105-42a2-a16a-77a8eac79483:2014-08-01T13:28:10.2735393-04:00",
			time.Date(2014, 8, 1, 17, 28, 10, 273539300, time.UTC)},
		{`{"RecordType":"Bounce","ID":4323372036854775807,"Type":"HardBounce","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483",` +
			`"BouncedAt":"2019-11-05T16:33:54.9070259Z"}`,
			"postmark.bounce", "Bounce:883953f4-6105-42a2-a16a-77a8eac79483:4323372036854775807", time.Time{}},
		{`{"RecordType":"SpamComplaint","ID":42,"MessageID":"m-2","BouncedAt":"2019-11-05T16:33:54Z"}`,
			"postmark.spam_complaint", "SpamComplaint:m-2:42", time.Time{}},
		{`{"RecordType":"SubscriptionChange","MessageID":"m-3","ChangedAt":"2020-02-01T10:53:34.416071Z","SuppressSending":true}`,
			"postmark.subscription_change", "SubscriptionChange:m-3:2020-02-01T10:53:34.416071Z",
			time.Date(2020, 2, 1, 10, 53, 34, 416071000, time.UTC)},
		{`{"FromName":"Postmarkapp Support","MessageID":"73e6d360-66eb-11e1-8e72-a8904824019b","FromFull":{"Email":"support@postmarkapp.com"},` +
			`"Subject":"Test subject","Date":"Fri, 1 Aug 2014 16:45:32 -04:00"}`,
			"postmark.inbound", "Inbound:73e6d360-66eb-11e1-8e72-a8904824019b", time.Date(2014, 8, 1, 20, 45, 32, 0, time.UTC)},
	}
	for _, c := range cases {
		ev := oneEvent(t, adapter(t, "postmark"), post(c.body), nil)
		if ev.Type != c.typ || ev.ProviderEventID != c.id {
			t.Errorf("got type %q id %q, want %q %q", ev.Type, ev.ProviderEventID, c.typ, c.id)
		}
		if !c.at.IsZero() && !ev.OccurredAt.Equal(c.at) {
			t.Errorf("%s: OccurredAt = %v, want %v", c.typ, ev.OccurredAt, c.at)
		}
	}
	_, err := adapter(t, "postmark").Interpret(post(`{"Subject":"?"}`), nil)
	wantPermanent(t, err)
}

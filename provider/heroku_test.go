package provider

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// Heroku publishes no vector with its secret; these requests are signed as
// https://devcenter.heroku.com/articles/app-webhooks and
// https://devcenter.heroku.com/articles/addon-webhooks describe
// (Heroku-Webhook-Hmac-SHA256: base64 HMAC-SHA256 of the body under the
// webhook's secret). The body is the api:addon-attachment create example of
// https://devcenter.heroku.com/articles/webhook-events.
const (
	herokuSecret = "heroku-webhook-secret-3b9d"
	herokuBody   = `{"action":"create","actor":{"email":"user-0165@example.com","id":"33500732-3b64-436f-9710-64cc569c3e4f"},` +
		`"created_at":"2016-10-26T22:48:45Z","id":"7846bee9-b017-4492-9bed-34cd8327e71d",` +
		`"data":{"addon":{"id":"c53451e0-bd35-4a30-b2c1-6220cc8d759e","name":"my-resource-0003"},` +
		`"app":{"id":"d2f24bd2-399a-4868-9467-bc0ba2411cc2","name":"sample-app-0084"},"id":"25bfb830-8c4a-49e1-b0a3-831da386de90","name":"DATABASE"},` +
		`"previous_data":{},"published_at":null,"resource":"addon-attachment","sequence":null,"updated_at":"2016-10-26T22:48:45Z",` +
		`"version":"application/vnd.heroku+json; version=3","webhook_metadata":{"attempt":{"id":"8a44f820-2354-489d-9a11-a793cbf49979"},` +
		`"delivery":{"id":"d244009a-670f-4340-88e9-789a4f9002d5"},"event":{"id":"7846bee9-b017-4492-9bed-34cd8327e71d","include":"api:addon-attachment"},` +
		`"webhook":{"id":"b54e6a7e-d162-4bd7-ab42-1011582c19cc"}}}`
)

func herokuRequest(sig, body string) *Request { return post(body, "Heroku-Webhook-Hmac-SHA256", sig) }

func TestHerokuVerifiesSignedDeliveryWithRotatedSecrets(t *testing.T) {
	sig := b64MAC(sha256.New, herokuSecret, herokuBody)
	wantVerified(t, adapter(t, "heroku").Verify(herokuRequest(sig, herokuBody), secrets("heroku-old", herokuSecret), nil))
	wantVerified(t, adapter(t, "heroku").Verify(herokuRequest(strings.TrimRight(sig, "="), herokuBody), secrets(herokuSecret), nil))
}

func TestHerokuRejects(t *testing.T) {
	sig := b64MAC(sha256.New, herokuSecret, herokuBody)
	wantAllRejected(t, "heroku", nil, []rejectCase{
		{"tampered body", herokuRequest(sig, strings.Replace(herokuBody, "create", "destroy", 1)), secrets(herokuSecret)},
		{"wrong secret", herokuRequest(sig, herokuBody), secrets("heroku-other")},
		{"no secrets", herokuRequest(sig, herokuBody), nil},
		{"missing header", herokuRequest("", herokuBody), secrets(herokuSecret)},
		{"hex instead of base64", herokuRequest(sha256Hex(herokuSecret, herokuBody), herokuBody), secrets(herokuSecret)},
		{"not base64", herokuRequest("***", herokuBody), secrets(herokuSecret)},
	})
}

func TestHerokuInterpretsAddonAttachmentCreate(t *testing.T) {
	ev := oneEvent(t, adapter(t, "heroku"), herokuRequest("", herokuBody), nil)
	if ev.Type != "heroku.addon-attachment.create" || ev.ProviderEventID != "7846bee9-b017-4492-9bed-34cd8327e71d" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"25bfb830-8c4a-49e1-b0a3-831da386de90", "d2f24bd2-399a-4868-9467-bc0ba2411cc2"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2016, 10, 26, 22, 48, 45, 0, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	_, err := adapter(t, "heroku").Interpret(herokuRequest("", `{"id":"x","action":"create"}`), nil)
	wantPermanent(t, err)
}

package provider

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Chargebee authenticates by basic auth, not a signature; the event is the
// shape of the examples in its events API reference
// (https://apidocs.chargebee.com/docs/api/events).
const (
	cbCreds = "intake:s3cret-hook-pass"
	cbBody  = `{"id":"ev_16BPgETyVrQbiGhA","occurred_at":1517505104,"source":"admin","user":"full_access_key_v1","object":"event","api_version":"v2",` +
		`"content":{"subscription":{"id":"169lvkSZ3z8nb1g","plan_id":"basic","status":"active"},"customer":{"id":"16BPgETyVrQVHGh1","first_name":"Mark","email":"mark@example.com"}},` +
		`"event_type":"subscription_created","webhook_status":"not_configured"}`
)

func TestChargebeeAcceptsItsBasicAuthCredentials(t *testing.T) {
	r := post(cbBody, "Authorization", basicAuth(cbCreds))
	wantVerified(t, adapter(t, "chargebee").Verify(r, secrets("intake:old-pass", cbCreds), nil))
}

func TestChargebeeRejects(t *testing.T) {
	wantAllRejected(t, "chargebee", nil, []rejectCase{
		{"wrong password", post(cbBody, "Authorization", basicAuth("intake:s3cret-hook-pasS")), secrets(cbCreds)},
		{"wrong user", post(cbBody, "Authorization", basicAuth("admin:s3cret-hook-pass")), secrets(cbCreds)},
		{"no secrets", post(cbBody, "Authorization", basicAuth(cbCreds)), nil},
		{"empty secret", post(cbBody, "Authorization", basicAuth(":")), secrets("")},
		{"missing header", post(cbBody), secrets(cbCreds)},
		{"bearer scheme", post(cbBody, "Authorization", "Bearer "+cbCreds), secrets(cbCreds)},
		{"not base64", post(cbBody, "Authorization", "Basic ***"), secrets(cbCreds)},
		{"no colon", post(cbBody, "Authorization", basicAuth("intake")), secrets("intake")},
	})
}

func TestChargebeeInterpretsTheEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "chargebee"), post(cbBody), nil)
	if ev.ProviderEventID != "ev_16BPgETyVrQbiGhA" || ev.Type != "chargebee.subscription_created" || ev.Kind != intake.KindEvent {
		t.Fatalf("id %q type %q", ev.ProviderEventID, ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"16BPgETyVrQVHGh1", "169lvkSZ3z8nb1g"}) || !ev.OccurredAt.Equal(time.Unix(1517505104, 0)) || string(ev.Data) != cbBody {
		t.Errorf("ObjectIDs %v OccurredAt %v Data %s", ev.ObjectIDs, ev.OccurredAt, ev.Data)
	}
}

func TestChargebeeRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"id":"ev_1"}`, "[]"} {
		_, err := adapter(t, "chargebee").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

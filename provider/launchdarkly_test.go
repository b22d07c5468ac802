package provider

import (
	"testing"
	"time"
)

// LaunchDarkly publishes no vector; these requests are signed as
// https://docs.launchdarkly.com/home/connecting/webhooks describes
// (X-LD-Signature: hex HMAC-SHA256 of the payload under the secret). The
// body is the sample payload of LaunchDarkly's webhooks API reference.
const (
	ldSecret = "ld-webhook-secret-5f2c"
	ldBody   = `{"_links":{"canonical":{"href":"/api/v2/projects/alexis/environments/test","type":"application/json"},` +
		`"parent":{"href":"/api/v2/auditlog","type":"application/json"},"self":{"href":"/api/v2/auditlog/57c0a8e29969090743529965","type":"application/json"}},` +
		`"_id":"57c0a8e29969090743529965","date":1472243938774,"accesses":[{"action":"updateName","resource":"proj/alexis:env/test"}],` +
		`"kind":"environment","name":"Testing","description":"- Changed the name from ~~Test~~ to *Testing*",` +
		`"member":{"_id":"548f6741c1efad40031b18ae","email":"ariel@acme.com","firstName":"Ariel","lastName":"Flores"},` +
		`"titleVerb":"changed the name of","title":"[Ariel Flores](mailto:ariel@acme.com) changed the name of [Testing](https://app.launchdarkly.com/settings#/projects)"}`
	ldFlagBody = `{"_links":{"canonical":{"href":"/api/v2/flags/default/new-checkout"}},"_id":"65f2b1c3d4e5f60718293a4b","date":1741944410000,` +
		`"accesses":[{"action":"updateOn","resource":"proj/default:env/production:flag/new-checkout"},` +
		`{"action":"updateFallthrough","resource":"proj/default:env/production:flag/new-checkout"}],"kind":"flag","name":"New checkout"}`
)

func ldRequest(sig, body string) *Request { return post(body, "X-LD-Signature", sig) }

func TestLaunchDarklyVerifiesSignedDeliveryWithRotatedSecrets(t *testing.T) {
	r := ldRequest(sha256Hex(ldSecret, ldBody), ldBody)
	wantVerified(t, adapter(t, "launchdarkly").Verify(r, secrets("ld-old-secret", ldSecret), nil))
}

func TestLaunchDarklyRejects(t *testing.T) {
	sig := sha256Hex(ldSecret, ldBody)
	wantAllRejected(t, "launchdarkly", nil, []rejectCase{
		{"tampered body", ldRequest(sig, ldFlagBody), secrets(ldSecret)},
		{"wrong secret", ldRequest(sig, ldBody), secrets("ld-other-secret")},
		{"no secrets", ldRequest(sig, ldBody), nil},
		{"missing header", ldRequest("", ldBody), secrets(ldSecret)},
		{"not hex", ldRequest("sha256="+sig, ldBody), secrets(ldSecret)},
	})
}

func TestLaunchDarklyInterpretsAuditLogEntries(t *testing.T) {
	ev := oneEvent(t, adapter(t, "launchdarkly"), ldRequest("", ldBody), nil)
	if ev.Type != "launchdarkly.environment.updateName" || ev.ProviderEventID != "57c0a8e29969090743529965" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"/api/v2/projects/alexis/environments/test", "proj/alexis:env/test"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.UnixMilli(1472243938774); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}

	// A change of several actions is typed by its first.
	ev = oneEvent(t, adapter(t, "launchdarkly"), ldRequest("", ldFlagBody), nil)
	if ev.Type != "launchdarkly.flag.updateOn" {
		t.Fatalf("got type %q", ev.Type)
	}
	if !equalStrings(ev.ObjectIDs, []string{"/api/v2/flags/default/new-checkout", "proj/default:env/production:flag/new-checkout"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}

	_, err := adapter(t, "launchdarkly").Interpret(ldRequest("", `{"_id":"x"}`), nil)
	wantPermanent(t, err)
}

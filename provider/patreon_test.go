package provider

import (
	"crypto/md5"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Patreon documents the scheme (hex HMAC-MD5 of the body under the
// webhook's secret) but publishes no signed example; the member below is
// shaped as its API reference's Member resource and signed here.
const (
	patreonSecret = "patreon-webhook-secret-0123456789abcdef"
	patreonBody   = `{"data":{"attributes":{"currently_entitled_amount_cents":500,"last_charge_status":"Paid","patron_status":"active_patron","pledge_relationship_start":"2025-03-14T09:26:50.000+00:00"},"id":"03ca69c3-ebea-4b9a-8fac-e4a837873254","relationships":{"campaign":{"data":{"id":"12345","type":"campaign"}},"user":{"data":{"id":"67890","type":"user"}}},"type":"member"},"links":{"self":"https://www.patreon.com/api/oauth2/v2/members/03ca69c3-ebea-4b9a-8fac-e4a837873254"}}`
)

var patreonSignature = hexMAC(md5.New, patreonSecret, patreonBody)

func patreonRequest(sig, event, body string) *Request {
	return post(body, "X-Patreon-Signature", sig, "X-Patreon-Event", event)
}

func TestPatreonVerifiesItsSignature(t *testing.T) {
	r := patreonRequest(patreonSignature, "members:pledge:create", patreonBody)
	wantVerified(t, adapter(t, "patreon").Verify(r, secrets("an-older-secret", patreonSecret), nil))
}

func TestPatreonRejects(t *testing.T) {
	wantAllRejected(t, "patreon", nil, []rejectCase{
		{"body changed by one byte", patreonRequest(patreonSignature, "members:pledge:create", strings.Replace(patreonBody, "500", "501", 1)), secrets(patreonSecret)},
		{"wrong secret", patreonRequest(patreonSignature, "members:pledge:create", patreonBody), secrets("another-secret")},
		{"no secrets", patreonRequest(patreonSignature, "members:pledge:create", patreonBody), nil},
		{"empty secret", patreonRequest(hexMAC(md5.New, "", patreonBody), "members:pledge:create", patreonBody), secrets("")},
		{"missing header", patreonRequest("", "members:pledge:create", patreonBody), secrets(patreonSecret)},
		{"SHA-256 instead of MD5", patreonRequest(sha256Hex(patreonSecret, patreonBody), "members:pledge:create", patreonBody), secrets(patreonSecret)},
	})
}

func TestPatreonInterpretsTheEventHeader(t *testing.T) {
	ev := oneEvent(t, adapter(t, "patreon"), patreonRequest("", "members:pledge:create", patreonBody), nil)
	if ev.Type != "patreon.members.pledge.create" || ev.Kind != intake.KindEvent || !strings.HasPrefix(ev.ProviderEventID, "patreon:") {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"03ca69c3-ebea-4b9a-8fac-e4a837873254", "67890", "12345"}) || string(ev.Data) != patreonBody {
		t.Errorf("ObjectIDs %v Data %s", ev.ObjectIDs, ev.Data)
	}
}

func TestPatreonBuildsTheSameIDForARetryAndAnotherForAnotherTrigger(t *testing.T) {
	a := adapter(t, "patreon")
	first := oneEvent(t, a, patreonRequest("", "members:pledge:create", patreonBody), nil)
	retry := oneEvent(t, a, patreonRequest("", "members:pledge:create", patreonBody), nil)
	other := oneEvent(t, a, patreonRequest("", "members:create", patreonBody), nil)
	if first.ProviderEventID != retry.ProviderEventID || first.ProviderEventID == other.ProviderEventID {
		t.Fatalf("ids %q %q %q", first.ProviderEventID, retry.ProviderEventID, other.ProviderEventID)
	}
}

func TestPatreonRejectsUninterpretableRequestsPermanently(t *testing.T) {
	for _, r := range []*Request{
		patreonRequest("", "", patreonBody),
		patreonRequest("", "members:create", "not json"),
		patreonRequest("", "members:create", "[]"),
	} {
		_, err := adapter(t, "patreon").Interpret(r, nil)
		wantPermanent(t, err)
	}
}

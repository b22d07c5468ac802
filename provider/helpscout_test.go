package provider

import (
	"crypto/sha1"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Help Scout's documented verification example
// (https://developer.helpscout.com/webhooks/, as its samples quote it):
// this body under the key "your secret key" signs as below.
const (
	helpscoutDocSecret    = "your secret key"
	helpscoutDocBody      = `{"ticket":{"id":"1","number":"2"},"customer":{"id":"1","fname":"Jackie","lname":"Chan","email":"jackie.chan@somewhere.com","emails":["jackie.chan@somewhere.com"]}}`
	helpscoutDocSignature = "I1KlvGppYqvFTJgJ9jezdQMDiyI="
	helpscoutConvoBody    = `{"id":10,"number":12,"type":"email","folderId":1,"status":"active","state":"published","subject":"Help","createdAt":"2012-10-10T12:00:00Z","mailboxId":1}`
)

func helpscoutRequest(sig, event, body string) *Request {
	return post(body, "X-HelpScout-Signature", sig, "X-HelpScout-Event", event)
}

func TestHelpscoutVerifiesDocumentedExample(t *testing.T) {
	r := helpscoutRequest(helpscoutDocSignature, "customer.created", helpscoutDocBody)
	wantVerified(t, adapter(t, "helpscout").Verify(r, secrets("an-older-key", helpscoutDocSecret), nil))
}

func TestHelpscoutRejects(t *testing.T) {
	good := func(body string) *Request { return helpscoutRequest(helpscoutDocSignature, "customer.created", body) }
	wantAllRejected(t, "helpscout", nil, []rejectCase{
		{"body changed by one byte", good(strings.Replace(helpscoutDocBody, "Jackie", "Jackia", 1)), secrets(helpscoutDocSecret)},
		{"wrong secret", good(helpscoutDocBody), secrets("your secret kez")},
		{"no secrets", good(helpscoutDocBody), nil},
		{"empty secret", helpscoutRequest(b64MAC(sha1.New, "", helpscoutDocBody), "customer.created", helpscoutDocBody), secrets("")},
		{"missing header", helpscoutRequest("", "customer.created", helpscoutDocBody), secrets(helpscoutDocSecret)},
		{"SHA-256 instead of SHA-1", helpscoutRequest(hmacB64(helpscoutDocSecret, helpscoutDocBody), "customer.created", helpscoutDocBody), secrets(helpscoutDocSecret)},
	})
}

func TestHelpscoutInterpretsTheEventHeader(t *testing.T) {
	ev := oneEvent(t, adapter(t, "helpscout"), helpscoutRequest("", "convo.assigned", helpscoutConvoBody), nil)
	if ev.Type != "helpscout.convo.assigned" || ev.Kind != intake.KindEvent || !strings.HasPrefix(ev.ProviderEventID, "helpscout:") {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"10", "12"}) || string(ev.Data) != helpscoutConvoBody {
		t.Errorf("ObjectIDs %v Data %s", ev.ObjectIDs, ev.Data)
	}
}

func TestHelpscoutBuildsTheSameIDForARetryAndAnotherForAnotherEvent(t *testing.T) {
	a := adapter(t, "helpscout")
	first := oneEvent(t, a, helpscoutRequest("", "convo.assigned", helpscoutConvoBody), nil)
	retry := oneEvent(t, a, helpscoutRequest("", "convo.assigned", helpscoutConvoBody), nil)
	other := oneEvent(t, a, helpscoutRequest("", "convo.status", helpscoutConvoBody), nil)
	changed := oneEvent(t, a, helpscoutRequest("", "convo.assigned", strings.Replace(helpscoutConvoBody, "active", "closed", 1)), nil)
	if first.ProviderEventID != retry.ProviderEventID || first.ProviderEventID == other.ProviderEventID || first.ProviderEventID == changed.ProviderEventID {
		t.Fatalf("ids %q %q %q %q", first.ProviderEventID, retry.ProviderEventID, other.ProviderEventID, changed.ProviderEventID)
	}
}

func TestHelpscoutRejectsUninterpretableRequestsPermanently(t *testing.T) {
	for _, r := range []*Request{
		helpscoutRequest("", "", helpscoutConvoBody),
		helpscoutRequest("", "convo.assigned", "not json"),
		helpscoutRequest("", "convo.assigned", "[]"),
	} {
		_, err := adapter(t, "helpscout").Interpret(r, nil)
		wantPermanent(t, err)
	}
}

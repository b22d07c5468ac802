package provider

import (
	"testing"
	"time"
)

// Notion publishes no vector; these requests are signed with a known
// verification token as https://developers.notion.com/reference/webhooks
// describes: X-Notion-Signature: sha256=<hex HMAC-SHA256 of the body>.
const (
	notionToken = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"
	notionBody  = `{"id":"367cba44-b6f3-4c92-81e7-6a2e9659efd4","timestamp":"2024-12-05T23:55:34.285Z",` +
		`"workspace_id":"13950b26-c203-4f3b-b97d-93ec06319565","subscription_id":"29d75c0d-5546-4414-8459-7b7a92f1fc4b",` +
		`"integration_id":"0ef2e755-4912-8096-91c1-00376a88a5ca","type":"page.created","attempt_number":1,` +
		`"entity":{"id":"153104cd-477e-809d-8dc4-ff2d96ae3090","type":"page"},` +
		`"data":{"parent":{"id":"13950b26-c203-4f3b-b97d-93ec06319565","type":"space"}}}`
)

func notionRequest(sig, body string) *Request { return post(body, "X-Notion-Signature", sig) }

func TestNotionVerifiesSignedEvent(t *testing.T) {
	sig := "sha256=" + sha256Hex(notionToken, notionBody)
	wantVerified(t, adapter(t, "notion").Verify(notionRequest(sig, notionBody), secrets("secret_old", notionToken), nil))
}

func TestNotionRejects(t *testing.T) {
	sig := "sha256=" + sha256Hex(notionToken, notionBody)
	wantAllRejected(t, "notion", nil, []rejectCase{
		{"tampered body", notionRequest(sig, notionBody+" "), secrets(notionToken)},
		{"wrong token", notionRequest(sig, notionBody), secrets("secret_other")},
		{"no secrets", notionRequest(sig, notionBody), nil},
		{"missing header", notionRequest("", notionBody), secrets(notionToken)},
		{"missing prefix", notionRequest(sig[7:], notionBody), secrets(notionToken)},
		// A verification request must be exactly the token: anything else
		// unsigned is refused.
		{"unsigned event posing as verification", notionRequest("", `{"verification_token":"x","type":"page.created"}`), secrets(notionToken)},
	})
}

func TestNotionRecordsVerificationRequestAsHandshake(t *testing.T) {
	r := notionRequest("", `{"verification_token":"secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"}`)
	wantVerified(t, adapter(t, "notion").Verify(r, nil, nil))
	in, err := adapter(t, "notion").Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
}

func TestNotionInterpretsPageCreated(t *testing.T) {
	ev := oneEvent(t, adapter(t, "notion"), notionRequest("", notionBody), nil)
	if ev.Type != "notion.page.created" || ev.ProviderEventID != "367cba44-b6f3-4c92-81e7-6a2e9659efd4" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"153104cd-477e-809d-8dc4-ff2d96ae3090", "13950b26-c203-4f3b-b97d-93ec06319565"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2024, 12, 5, 23, 55, 34, 285000000, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

package provider

import (
	"net/url"
	"testing"

	"github.com/intakehq/intake"
)

// Dropbox publishes no vector with its secret; these requests are signed
// with a known app secret as https://www.dropbox.com/developers/reference/webhooks
// describes: X-Dropbox-Signature is the hex HMAC-SHA256 of the body.
const (
	dropboxSecret = "dropbox-app-secret"
	dropboxBody   = `{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc","dbid:AACk9Zc6g2Jr3Z3Nx2sX0o3b6Jz6"]},"delta":{"users":[12345678,23456789]}}`
)

func dropboxRequest(sig, body string) *Request { return post(body, "X-Dropbox-Signature", sig) }

func dropboxVerification(challenge string) *Request {
	return &Request{Method: "GET", URL: fuzzURL + "?challenge=" + url.QueryEscape(challenge),
		Query: url.Values{"challenge": {challenge}}, Header: headers(), ReceivedAt: received}
}

func TestDropboxVerifiesSignedNotification(t *testing.T) {
	wantVerified(t, adapter(t, "dropbox").Verify(dropboxRequest(sha256Hex(dropboxSecret, dropboxBody), dropboxBody), secrets("old", dropboxSecret), nil))
}

func TestDropboxRejects(t *testing.T) {
	sig := sha256Hex(dropboxSecret, dropboxBody)
	post := dropboxVerification("abc")
	post.Method = "POST"
	wantAllRejected(t, "dropbox", nil, []rejectCase{
		{"tampered body", dropboxRequest(sig, dropboxBody+" "), secrets(dropboxSecret)},
		{"wrong secret", dropboxRequest(sig, dropboxBody), secrets("other")},
		{"no secrets", dropboxRequest(sig, dropboxBody), nil},
		{"missing header", dropboxRequest("", dropboxBody), secrets(dropboxSecret)},
		{"challenge by POST", post, secrets(dropboxSecret)},
	})
}

func TestDropboxEchoesVerificationChallenge(t *testing.T) {
	a := adapter(t, "dropbox")
	r := dropboxVerification("<script>abc")
	c, ok := a.(Challenger).Challenge(r, nil, nil)
	if !ok || c.Status != 200 || c.ContentType != "text/plain" || string(c.Body) != "<script>abc" ||
		c.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	wantVerified(t, a.Verify(r, nil, nil))
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
	if _, ok := a.(Challenger).Challenge(dropboxRequest("", dropboxBody), nil, nil); ok {
		t.Error("a notification was answered as a challenge")
	}
}

func TestDropboxSplitsNotificationIntoChangeNoticePerAccount(t *testing.T) {
	in, err := adapter(t, "dropbox").Interpret(dropboxRequest("", dropboxBody), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	for i, want := range []string{"dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "dbid:AACk9Zc6g2Jr3Z3Nx2sX0o3b6Jz6"} {
		ev := in.Events[i]
		if ev.Type != "dropbox.list_folder" || ev.Kind != intake.KindChangeNotice || ev.ProviderEventID != "" || !equalStrings(ev.ObjectIDs, []string{want}) {
			t.Errorf("event %d = %+v", i, ev)
		}
	}
	if in.ProviderEventID != "" || in.Kind != intake.KindChangeNotice || in.EventType != "dropbox.list_folder" {
		t.Errorf("message fields %q %q %q", in.ProviderEventID, in.Kind, in.EventType)
	}
}

package provider

import (
	"crypto/sha1"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Mandrill publishes no signed example; the events are the shapes of its
// webhook format reference
// (https://mailchimp.com/developer/transactional/docs/webhooks/), posted and
// signed as its authentication guide says: base64 HMAC-SHA1 of the URL
// followed by each parameter's name and value, sorted by name.
const (
	mandrillKey    = "mWlY2o9X5tiHCo1dKJbD5Q"
	mandrillEvents = `[{"event":"send","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa","ts":1365109999,` +
		`"msg":{"ts":1365109999,"subject":"This an example webhook message","email":"example.webhook@mandrillapp.com","sender":"example.sender@mandrillapp.com","state":"sent","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa"}},` +
		`{"event":"click","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa","ts":1365110001,"url":"https://mandrill.com","msg":{"_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa"}},` +
		`{"type":"blacklist","action":"add","reject":{"email":"example.webhook@mandrillapp.com","reason":"hard-bounce"},"ts":1365110002}]`
)

// mandrillBody is the form Mandrill posts.
func mandrillBody(events string) string { return url.Values{"mandrill_events": {events}}.Encode() }

// mandrillSign signs a form as Mandrill does.
func mandrillSign(key, u, body string) string {
	form, _ := url.ParseQuery(body)
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	signed := u
	sort.Strings(keys)
	for _, k := range keys {
		signed += k + form.Get(k)
	}
	return b64MAC(sha1.New, key, signed)
}

func mandrillRequest(key, body string) *Request {
	return post(body, "Content-Type", "application/x-www-form-urlencoded", "X-Mandrill-Signature", mandrillSign(key, fuzzURL, body))
}

func TestMandrillVerifiesURLAndSortedParameters(t *testing.T) {
	body := mandrillBody(mandrillEvents)
	wantVerified(t, adapter(t, "mandrill").Verify(mandrillRequest(mandrillKey, body), secrets("old-key", mandrillKey), nil))
	// Parameters are signed sorted by name, whatever their order in the body.
	two := "z=1&" + body + "&a=2"
	wantVerified(t, adapter(t, "mandrill").Verify(mandrillRequest(mandrillKey, two), secrets(mandrillKey), nil))
}

func TestMandrillRejects(t *testing.T) {
	body := mandrillBody(mandrillEvents)
	good := mandrillRequest(mandrillKey, body)
	tampered := mandrillRequest(mandrillKey, body)
	tampered.Body = []byte(strings.Replace(body, "hard-bounce", "hard-bouncE", 1))
	otherURL := mandrillRequest(mandrillKey, body)
	otherURL.URL = fuzzURL + "x"
	noURL := mandrillRequest(mandrillKey, body)
	noURL.URL = ""
	repeated := mandrillRequest(mandrillKey, body+"&"+body)
	wantAllRejected(t, "mandrill", nil, []rejectCase{
		{"body changed by one byte", tampered, secrets(mandrillKey)},
		{"another URL", otherURL, secrets(mandrillKey)},
		{"public URL unknown", noURL, secrets(mandrillKey)},
		{"wrong key", good, secrets("another-key")},
		{"no secrets", good, nil},
		{"empty secret", mandrillRequest("", body), secrets("")},
		{"missing header", post(body), secrets(mandrillKey)},
		{"parameter repeated", repeated, secrets(mandrillKey)},
		{"signature not base64", post(body, "X-Mandrill-Signature", "***"), secrets(mandrillKey)},
	})
}

func TestMandrillAnswersItsHeadCheck(t *testing.T) {
	head := &Request{Method: "HEAD", URL: fuzzURL, Header: headers(), ReceivedAt: received}
	c, ok := adapter(t, "mandrill").(Challenger).Challenge(head, nil, nil)
	if !ok || c.Status != 200 {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	in, err := adapter(t, "mandrill").Interpret(head, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	if _, ok := adapter(t, "mandrill").(Challenger).Challenge(post(mandrillBody(mandrillEvents)), nil, nil); ok {
		t.Fatal("a delivery was answered as a handshake")
	}
}

func TestMandrillSettlesAnEmptyTestBatchAsAChallenge(t *testing.T) {
	in, err := adapter(t, "mandrill").Interpret(post(mandrillBody("[]")), nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
}

func TestMandrillInterpretsOneEventPerItem(t *testing.T) {
	in, err := adapter(t, "mandrill").Interpret(post(mandrillBody(mandrillEvents)), nil)
	if err != nil || len(in.Events) != 3 || in.EventType != "mandrill.batch" {
		t.Fatalf("%+v, %v", in, err)
	}
	for i, want := range []struct{ id, typ string }{
		{"send:exampleaaaaaaaaaaaaaaaaaaaaaaaaa:1365109999", "mandrill.send"},
		{"click:exampleaaaaaaaaaaaaaaaaaaaaaaaaa:1365110001:https://mandrill.com", "mandrill.click"},
		{"blacklist:add:example.webhook@mandrillapp.com:1365110002", "mandrill.blacklist.add"},
	} {
		ev := in.Events[i]
		if ev.ProviderEventID != want.id || ev.Type != want.typ || ev.Kind != intake.KindEvent || ev.OccurredAt.IsZero() {
			t.Errorf("event %d: id %q type %q at %v", i, ev.ProviderEventID, ev.Type, ev.OccurredAt)
		}
	}
	if !equalStrings(in.Events[0].ObjectIDs, []string{"exampleaaaaaaaaaaaaaaaaaaaaaaaaa"}) || !strings.HasPrefix(string(in.Events[0].Data), `{"_id":`) {
		t.Errorf("ObjectIDs %v Data %s", in.Events[0].ObjectIDs, in.Events[0].Data)
	}
}

func TestMandrillNamesEveryEventOfABatchPastTheMaximum(t *testing.T) {
	items := make([]string, intake.MaxEventsPerMessage+1)
	for i := range items {
		items[i] = fmt.Sprintf(`{"event":"open","_id":"m%d","ts":1365109999}`, i)
	}
	in, err := adapter(t, "mandrill").Interpret(post(mandrillBody("["+strings.Join(items, ",")+"]")), nil)
	if err != nil || len(in.Events) != intake.MaxEventsPerMessage+1 {
		t.Fatalf("Interpret: %d events, %v", len(in.Events), err)
	}
}

func TestMandrillRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "x=1", mandrillBody("{}"), mandrillBody(`[{"ts":1}]`), "%zz"} {
		_, err := adapter(t, "mandrill").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"crypto/sha1"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// Trello publishes no vector; these are computed as
// https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/
// describes (base64 HMAC-SHA1 of the body followed by the callbackURL, under
// the application secret, the text taken as Node's "binary" strings), with
// Node's crypto.createHmac(...).update(body + url, "latin1"). The body holds
// an en dash and an emoji, so the binary reading matters: the en dash
// (U+2013) is signed as the byte 0x13.
const (
	trelloSecret = "trello-app-secret"
	trelloURL    = "https://intake.example.com/webhooks/tok"
	trelloBody   = `{"action":{"id":"5e8a9f0c2b1a3d4e5f607182","idMemberCreator":"5a1b2c3d4e5f60718293a4b5","type":"updateCard","date":"2025-03-14T09:26:50.123Z","data":{"card":{"id":"5e8a9e7f1a2b3c4d5e6f7a8b","name":"Ship it – today 🚀","idShort":42,"shortLink":"AbCdEfGh"},"old":{"name":"Ship it"},"board":{"id":"5e8a9d6e0f1a2b3c4d5e6f70","name":"Roadmap","shortLink":"XyZ12345"}}},"model":{"id":"5e8a9d6e0f1a2b3c4d5e6f70","name":"Roadmap"}}`
	// trelloBinarySignature is the documented signature; trelloUTF8Signature
	// signs the UTF-8 bytes instead.
	trelloBinarySignature = "lvPk0RAIfzfc0JhdvUqjlxQCuTY="
	trelloUTF8Signature   = "dgI7u+dIU0YiZrITq6IS19r+hwc="
)

func trelloRequest(sig, body string) *Request {
	r := post(body, "X-Trello-Webhook", sig)
	r.URL = trelloURL
	return r
}

func trelloHead() *Request {
	return &Request{Method: "HEAD", URL: trelloURL, Header: headers(), ReceivedAt: received}
}

func TestTrelloVerifiesDocumentedBinarySignature(t *testing.T) {
	wantVerified(t, adapter(t, "trello").Verify(trelloRequest(trelloBinarySignature, trelloBody), secrets(trelloSecret), nil))
}

func TestTrelloVerifiesUTF8Signature(t *testing.T) {
	wantVerified(t, adapter(t, "trello").Verify(trelloRequest(trelloUTF8Signature, trelloBody), secrets(trelloSecret), nil))
}

func TestTrelloVerifiesASCIIBodyAndRotatedSecret(t *testing.T) {
	body := strings.NewReplacer("–", "-", " 🚀", "").Replace(trelloBody)
	sig := b64MAC(sha1.New, trelloSecret, body+trelloURL)
	wantVerified(t, adapter(t, "trello").Verify(trelloRequest(sig, body), secrets("the-old-secret", trelloSecret), nil))
}

func TestTrelloNodeBinaryKeepsLowByteOfEachUTF16Unit(t *testing.T) {
	got := nodeBinary([]byte("a–🚀\xff"))
	// a, U+2013, the surrogates D83D DE80, and U+FFFD for the invalid byte.
	want := []byte{'a', 0x13, 0x3d, 0x80, 0xfd}
	if string(got) != string(want) {
		t.Fatalf("nodeBinary = % x, want % x", got, want)
	}
}

func TestTrelloRejects(t *testing.T) {
	keys := secrets(trelloSecret)
	otherURL := trelloRequest(trelloBinarySignature, trelloBody)
	otherURL.URL = trelloURL + "/"
	noURL := trelloRequest(trelloBinarySignature, trelloBody)
	noURL.URL = ""
	wantAllRejected(t, "trello", nil, []rejectCase{
		{"tampered body", trelloRequest(trelloBinarySignature, strings.Replace(trelloBody, "updateCard", "deleteCard", 1)), keys},
		{"wrong secret", trelloRequest(trelloBinarySignature, trelloBody), secrets("other")},
		{"no secrets", trelloRequest(trelloBinarySignature, trelloBody), nil},
		{"another callback URL", otherURL, keys},
		{"public URL unknown", noURL, keys},
		{"body alone signed", trelloRequest(b64MAC(sha1.New, trelloSecret, trelloBody), trelloBody), keys},
		{"missing header", trelloRequest("", trelloBody), keys},
		{"signature not base64", trelloRequest("***", trelloBody), keys},
	})
}

func TestTrelloAnswersHeadCheck(t *testing.T) {
	a := adapter(t, "trello")
	c, ok := a.(Challenger).Challenge(trelloHead(), nil, nil)
	if !ok || c.Status != 200 {
		t.Fatalf("Challenge = %+v, %v; want 200", c, ok)
	}
	wantVerified(t, a.Verify(trelloHead(), nil, nil))
	in, err := a.Interpret(trelloHead(), nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
	if _, ok := a.(Challenger).Challenge(trelloRequest(trelloBinarySignature, trelloBody), nil, nil); ok {
		t.Error("a delivery was answered as a handshake")
	}
}

func TestTrelloInterpretsAction(t *testing.T) {
	ev := oneEvent(t, adapter(t, "trello"), trelloRequest("", trelloBody), nil)
	if ev.ProviderEventID != "5e8a9f0c2b1a3d4e5f607182" || ev.Type != "trello.updateCard" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"5e8a9e7f1a2b3c4d5e6f7a8b", "5e8a9d6e0f1a2b3c4d5e6f70"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if ev.OccurredAt.UnixMilli() != 1741944410123 {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != trelloBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v)", ev.Data, ev.DataTruncated)
	}
}

func TestTrelloRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"model":{"id":"b"}}`, `{"action":{"type":7}}`} {
		_, err := adapter(t, "trello").Interpret(trelloRequest("", body), nil)
		wantPermanent(t, err)
	}
}

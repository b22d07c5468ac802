package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// Zoom publishes no vector with its secret; these requests are signed with
// a known secret token as https://developers.zoom.us/docs/api/webhooks/
// describes (and zoom/webhook-sample, index.js, does): x-zm-signature:
// v0=<hex HMAC-SHA256 of "v0:<timestamp>:<body>">.
const (
	zoomSecret = "zoom-secret-token"
	zoomBody   = `{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"AAAAAABBBB",` +
		`"object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","host_id":"x1yCzABCDEfg23HiJKl4mN","topic":"My Meeting"}}}`
	zoomValidationBody = `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
)

func zoomRequest(secret, body string, at time.Time) *Request {
	ts := unix(at)
	return post(body, "x-zm-request-timestamp", ts, "x-zm-signature", "v0="+sha256Hex(secret, "v0:"+ts+":"+body))
}

func TestZoomVerifiesSignedEvent(t *testing.T) {
	wantVerified(t, adapter(t, "zoom").Verify(zoomRequest(zoomSecret, zoomBody, received), secrets("old token", zoomSecret), nil))
}

func TestZoomRejects(t *testing.T) {
	good := zoomRequest(zoomSecret, zoomBody, received)
	tampered := zoomRequest(zoomSecret, zoomBody, received)
	tampered.Body = []byte(zoomBody + " ")
	stale := zoomRequest(zoomSecret, zoomBody, received.Add(-6*time.Minute))
	future := zoomRequest(zoomSecret, zoomBody, received.Add(6*time.Minute))
	noTS := zoomRequest(zoomSecret, zoomBody, received)
	noTS.Header.Del("x-zm-request-timestamp")
	noSig := zoomRequest(zoomSecret, zoomBody, received)
	noSig.Header.Del("x-zm-signature")
	wantAllRejected(t, "zoom", nil, []rejectCase{
		{"tampered body", tampered, secrets(zoomSecret)},
		{"wrong secret", good, secrets("other")},
		{"no secrets", good, nil},
		{"stale timestamp", stale, secrets(zoomSecret)},
		{"future timestamp", future, secrets(zoomSecret)},
		{"missing timestamp", noTS, secrets(zoomSecret)},
		{"missing signature", noSig, secrets(zoomSecret)},
	})
}

func TestZoomAnswersURLValidationWithTheSigningSecret(t *testing.T) {
	a := adapter(t, "zoom")
	r := zoomRequest(zoomSecret, zoomValidationBody, received)
	c, ok := a.(Challenger).Challenge(r, secrets("older token", zoomSecret), nil)
	if !ok || c.Status != 200 || c.ContentType != "application/json" {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	var got map[string]string
	if err := json.Unmarshal(c.Body, &got); err != nil {
		t.Fatalf("answer %s: %v", c.Body, err)
	}
	m := hmac.New(sha256.New, []byte(zoomSecret))
	m.Write([]byte("qgg8vlvZRS6UYooatFL8Aw"))
	if got["plainToken"] != "qgg8vlvZRS6UYooatFL8Aw" || got["encryptedToken"] != hex.EncodeToString(m.Sum(nil)) || len(got) != 2 {
		t.Fatalf("answer %s", c.Body)
	}
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
}

func TestZoomWillNotHashAChosenTokenForAnUnsignedRequest(t *testing.T) {
	// The answer is an HMAC under the secret; given for a forged request it
	// would sign anything the forger chose.
	forged := zoomRequest("not the secret", zoomValidationBody, received)
	if c, ok := adapter(t, "zoom").(Challenger).Challenge(forged, secrets(zoomSecret), nil); ok {
		t.Fatalf("Challenge answered a forged validation: %+v", c)
	}
}

func TestZoomInterpretsMeetingStartedWithBuiltID(t *testing.T) {
	ev := oneEvent(t, adapter(t, "zoom"), zoomRequest(zoomSecret, zoomBody, received), nil)
	if ev.Type != "zoom.meeting.started" || ev.ProviderEventID != "meeting.started:1626230691572:4444AAAiAAAAAiAiAiiAii==" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"4444AAAiAAAAAiAiAiiAii==", "1234567890"}) || !ev.OccurredAt.Equal(time.UnixMilli(1626230691572)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
}

package provider

import (
	"net/http"
	"testing"
	"time"
)

// Twitch publishes no vector with its secret; these requests are signed
// with a known subscription secret as
// https://dev.twitch.tv/docs/eventsub/handling-webhook-events/ describes:
// sha256=<hex HMAC-SHA256 of message id + timestamp + body>.
const (
	twitchSecret = "s3cRe7-twitch-subscription"
	twitchBody   = `{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"enabled","type":"channel.follow","version":"2",` +
		`"condition":{"broadcaster_user_id":"1337"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},` +
		`"created_at":"2019-11-16T10:11:12.634234626Z"},"event":{"user_id":"1234","user_login":"cool_user","broadcaster_user_id":"1337",` +
		`"broadcaster_user_login":"cooler_user","followed_at":"2020-07-15T18:16:11.17106713Z"}}`
	twitchVerificationBody = `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4",` +
		`"status":"webhook_callback_verification_pending","type":"channel.follow","version":"2"}}`
)

func twitchRequest(secret, kind, body string, signedAt time.Time) *Request {
	id, ts := "e76c6bd4-55c9-4987-8304-da1588d8988b", signedAt.UTC().Format(time.RFC3339Nano)
	r := post(body, twitchIDHeader, id, twitchTimestampHeader, ts, twitchTypeHeader, kind,
		twitchSignatureHeader, "sha256="+sha256Hex(secret, id+ts+body))
	return r
}

func TestTwitchVerifiesSignedNotification(t *testing.T) {
	r := twitchRequest(twitchSecret, "notification", twitchBody, received.Add(-9*time.Minute))
	wantVerified(t, adapter(t, "twitch").Verify(r, secrets("old", twitchSecret), nil))
}

func TestTwitchRejects(t *testing.T) {
	good := twitchRequest(twitchSecret, "notification", twitchBody, received)
	tampered := twitchRequest(twitchSecret, "notification", twitchBody, received)
	tampered.Body = []byte(twitchBody + " ")
	otherID := twitchRequest(twitchSecret, "notification", twitchBody, received)
	otherID.Header.Set(twitchIDHeader, "another")
	noID := twitchRequest(twitchSecret, "notification", twitchBody, received)
	noID.Header.Del(twitchIDHeader)
	badTS := twitchRequest(twitchSecret, "notification", twitchBody, received)
	badTS.Header.Set(twitchTimestampHeader, "1700000000")
	wantAllRejected(t, "twitch", nil, []rejectCase{
		{"tampered body", tampered, secrets(twitchSecret)},
		{"tampered message id", otherID, secrets(twitchSecret)},
		{"wrong secret", good, secrets("other")},
		{"no secrets", good, nil},
		{"older than ten minutes", twitchRequest(twitchSecret, "notification", twitchBody, received.Add(-10*time.Minute-time.Second)), secrets(twitchSecret)},
		{"missing message id", noID, secrets(twitchSecret)},
		{"timestamp not RFC 3339", badTS, secrets(twitchSecret)},
	})
}

func TestTwitchBoundsOnlyTheAge(t *testing.T) {
	r := twitchRequest(twitchSecret, "notification", twitchBody, received.Add(time.Hour))
	wantVerified(t, adapter(t, "twitch").Verify(r, secrets(twitchSecret), nil))
}

func TestTwitchAnswersVerifiedChallenge(t *testing.T) {
	a := adapter(t, "twitch")
	r := twitchRequest(twitchSecret, "webhook_callback_verification", twitchVerificationBody, received)
	c, ok := a.(Challenger).Challenge(r, secrets(twitchSecret), nil)
	if !ok || c.Status != 200 || c.ContentType != "text/plain" || string(c.Body) != "pogchamp-kappa-360noscope-vohiyo" {
		t.Fatalf("Challenge = %+v, %v", c, ok)
	}
	in, err := a.Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v; want a handshake with no events", in, err)
	}
	forged := twitchRequest("not the secret", "webhook_callback_verification", twitchVerificationBody, received)
	if c, ok := a.(Challenger).Challenge(forged, secrets(twitchSecret), nil); !ok || c.Status != http.StatusForbidden || len(c.Body) != 0 {
		t.Fatalf("forged challenge answered %+v, %v; want 403", c, ok)
	}
	if _, ok := a.(Challenger).Challenge(twitchRequest(twitchSecret, "notification", twitchBody, received), secrets(twitchSecret), nil); ok {
		t.Error("a notification was answered as a challenge")
	}
}

func TestTwitchInterpretsNotificationAndRevocation(t *testing.T) {
	ev := oneEvent(t, adapter(t, "twitch"), twitchRequest(twitchSecret, "notification", twitchBody, received), nil)
	if ev.Type != "twitch.channel.follow" || ev.ProviderEventID != "e76c6bd4-55c9-4987-8304-da1588d8988b" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "1337"}) || !ev.OccurredAt.Equal(received) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
	rev := oneEvent(t, adapter(t, "twitch"), twitchRequest(twitchSecret, "revocation", twitchBody, received), nil)
	if rev.Type != "twitch.revocation" {
		t.Errorf("revocation type %q", rev.Type)
	}
	_, err := adapter(t, "twitch").Interpret(twitchRequest(twitchSecret, "something_else", twitchBody, received), nil)
	wantPermanent(t, err)
}

package provider

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// monday.com publishes no signed example; the event below is shaped as the
// create_pulse example of its webhooks reference, and the JWT is signed
// here as jsonwebtoken signs an app's HS256 token.
const (
	mondaySecret = "monday-app-signing-secret"
	mondayBody   = `{"event":{"userId":9603417,"originalTriggerUuid":null,"boardId":1771812698,"pulseId":1772099344,"pulseName":"Create_item webhook","groupId":"topics","groupName":"Group Title","groupColor":"#579bfc","isTopGroup":true,"columnValues":{},"app":"monday","type":"create_pulse","triggerTime":"2021-10-11T09:07:28.210Z","subscriptionId":73759690,"triggerUuid":"b5ed2e17c530f43668de130142445cba"}}`
)

func mondayJWT(secret, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	signing := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(claims))
	sig, _ := base64.StdEncoding.DecodeString(hmacB64(secret, signing))
	return signing + "." + enc(sig)
}

func mondayClaims(exp time.Time) string {
	return `{"accountId":1825528,"userId":9603417,"aud":"https://intake.example.com/webhooks/tok","exp":` + unix(exp) + `,"shortLivedToken":"x","iat":` + unix(exp.Add(-5*time.Minute)) + `}`
}

func mondayRequest(auth, body string) *Request { return post(body, "Authorization", auth) }

func TestMondayVerifiesAnAppsJWT(t *testing.T) {
	a := adapter(t, "monday")
	token := mondayJWT(mondaySecret, mondayClaims(received.Add(time.Minute)))
	wantVerified(t, a.Verify(mondayRequest(token, mondayBody), secrets("an-older-secret", mondaySecret), nil))
	wantVerified(t, a.Verify(mondayRequest("Bearer "+token, mondayBody), secrets(mondaySecret), nil))
	wantVerified(t, a.Verify(mondayRequest(mondayJWT(mondaySecret, `{"accountId":1}`), mondayBody), secrets(mondaySecret), nil))
}

func TestMondayRejects(t *testing.T) {
	token := mondayJWT(mondaySecret, mondayClaims(received.Add(time.Minute)))
	parts := strings.Split(token, ".")
	wantAllRejected(t, "monday", nil, []rejectCase{
		{"wrong secret", mondayRequest(token, mondayBody), secrets("another-secret")},
		{"no secrets", mondayRequest(token, mondayBody), nil},
		{"empty secret", mondayRequest(mondayJWT("", mondayClaims(received.Add(time.Minute))), mondayBody), secrets("")},
		{"claims changed", mondayRequest(parts[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(mondayClaims(received.Add(time.Hour))))+"."+parts[2], mondayBody), secrets(mondaySecret)},
		{"expired", mondayRequest(mondayJWT(mondaySecret, mondayClaims(received)), mondayBody), secrets(mondaySecret)},
		{"not yet valid", mondayRequest(mondayJWT(mondaySecret, `{"nbf":`+unix(received.Add(time.Second))+`}`), mondayBody), secrets(mondaySecret)},
		{"exp not a number", mondayRequest(mondayJWT(mondaySecret, `{"exp":"soon"}`), mondayBody), secrets(mondaySecret)},
		{"alg none", mondayRequest(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))+"."+parts[1]+".", mondayBody), secrets(mondaySecret)},
		{"not a JWT", mondayRequest("secret", mondayBody), secrets(mondaySecret)},
		{"missing header", mondayRequest("", mondayBody), secrets(mondaySecret)},
	})
}

func TestMondayAcceptsUnsignedBoardWebhooksOnlyWhenConfigured(t *testing.T) {
	a := adapter(t, "monday")
	wantRejected(t, a.Verify(mondayRequest("", mondayBody), secrets(mondaySecret), Config{}))
	wantVerified(t, a.Verify(mondayRequest("", mondayBody), nil, Config{"unsigned": true}))
	// A JWT that is there is still checked.
	wantRejected(t, a.Verify(mondayRequest(mondayJWT("forged", `{}`), mondayBody), secrets(mondaySecret), Config{"unsigned": true}))
	if err := a.ValidateConfig(Config{"unsigned": "yes"}); err == nil {
		t.Error("a non-boolean unsigned was accepted")
	}
}

func TestMondayAnswersTheChallengeWithTheSameJSON(t *testing.T) {
	a := adapter(t, "monday").(Challenger)
	r := post(`{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`)
	c, ok := a.Challenge(r, nil, nil)
	if !ok || c.Status != http.StatusOK || c.ContentType != "application/json" || string(c.Body) != `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}` {
		t.Fatalf("got %+v %v", c, ok)
	}
	wantVerified(t, adapter(t, "monday").Verify(r, nil, nil))
	in, err := adapter(t, "monday").Interpret(r, nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("got %+v %v, want a challenge with no events", in, err)
	}
	for _, body := range []string{mondayBody, `{"challenge":"c","event":{"type":"create_pulse"}}`, `{"challenge":7}`, "challenge=c"} {
		if _, ok := a.Challenge(post(body), nil, nil); ok {
			t.Errorf("answered %s as a challenge", body)
		}
	}
}

func TestMondayInterpretsAnEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "monday"), mondayRequest("", mondayBody), nil)
	if ev.ProviderEventID != "b5ed2e17c530f43668de130142445cba" || ev.Type != "monday.create_pulse" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2021, 10, 11, 9, 7, 28, 210e6, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"1772099344", "1771812698"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
}

func TestMondayRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"event":{}}`, "[]"} {
		_, err := adapter(t, "monday").Interpret(mondayRequest("", body), nil)
		wantPermanent(t, err)
	}
}

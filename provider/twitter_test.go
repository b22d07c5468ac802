package provider

import (
	"crypto/sha256"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// X publishes the scheme but no signed example, so the vectors below were
// computed with Python's hmac module, apart from Go: the CRC answer for a
// token and the signature of a delivery (shaped as X's Account Activity
// examples: a tweet and a favorite for one subscribed user).
const (
	twtSecret    = "twitter-consumer-secret"
	twtCRCToken  = "ZjQ4YTk0MDYtYzdhMS00ZWQ0LWE1OTYtNGRmMGRhNDYyNjk3"
	twtCRCAnswer = "sha256=E/yaxxH2NP4WG6IBrGjxPBz0JhQ5/TAunsZRVkS28Cc="
	twtBody      = `{"for_user_id":"2244994945","tweet_create_events":[{"created_at":"Wed Oct 10 20:19:24 +0000 2018","id":1050118621198921728,"id_str":"1050118621198921728","text":"To make room for more expression, we will now count all emojis as equal","timestamp_ms":"1539202764000","user":{"id":6253282,"id_str":"6253282","screen_name":"TwitterAPI"}}],"favorite_events":[{"id":"a7ba59eab0bfcba386f7acedac279542","created_at":"Mon Mar 26 16:33:26 +0000 2018","timestamp_ms":1522082006140,"favorited_status":{"id_str":"1050118621198921728"},"user":{"id_str":"2244994945"}}]}`
	twtBodySig   = "sha256=DZwzysqAGRzOJWMHfl8RO/tOFw5wP5D//i89uCKWWdI="
	twtFollow    = `{"for_user_id":"1","follow_events":[{"type":"follow","created_timestamp":"1517588749178","target":{"id":"2"},"source":{"id":"3"}}],` +
		`"user_event":{"revoke":{"date_time":"2018-05-24T09:48:12+00:00","target":{"app_id":"13090192"},"source":{"user_id":"63046977"}}}}`
)

func twtCRC(token string) *Request {
	r := post("")
	r.Method = http.MethodGet
	r.Query = url.Values{"crc_token": {token}, "nonce": {"MTUzOTIwMjc2NDAwMA"}}
	return r
}

func TestTwitterAnswersTheCRCWithThePythonVector(t *testing.T) {
	a := adapter(t, "twitter").(Challenger)
	ans, ok := a.Challenge(twtCRC(twtCRCToken), secrets("", twtSecret, "an-older-secret"), nil)
	if !ok || ans.Status != http.StatusOK || string(ans.Body) != `{"response_token":"`+twtCRCAnswer+`"}` || ans.ContentType != "application/json" {
		t.Fatalf("Challenge = %+v %s, %v", ans, ans.Body, ok)
	}
	in, err := adapter(t, "twitter").Interpret(twtCRC(twtCRCToken), nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	if _, ok := a.Challenge(post(twtBody, "x-twitter-webhooks-signature", twtBodySig), secrets(twtSecret), nil); ok {
		t.Fatal("a delivery was answered as a CRC")
	}
}

func TestTwitterNeverMACsATokenThatCouldBeADelivery(t *testing.T) {
	// The CRC answer is the MAC of the caller's text in a delivery's
	// signature form: answering {"…"} would sign a forged delivery.
	a := adapter(t, "twitter").(Challenger)
	for _, token := range []string{twtBody, `{"for_user_id":"1"}`, " {}", strings.Repeat("a", 257)} {
		ans, ok := a.Challenge(twtCRC(token), secrets(twtSecret), nil)
		if !ok || ans.Status != http.StatusBadRequest || len(ans.Body) != 0 {
			t.Errorf("token %.20q answered %+v %s", token, ans, ans.Body)
		}
	}
}

func TestTwitterVerifiesThePythonVector(t *testing.T) {
	wantVerified(t, adapter(t, "twitter").Verify(post(twtBody, "x-twitter-webhooks-signature", twtBodySig), secrets("an-older-secret", twtSecret), nil))
	if got := "sha256=" + b64MAC(sha256.New, twtSecret, twtBody); got != twtBodySig {
		t.Fatalf("Go computes %s, Python %s", got, twtBodySig)
	}
}

func TestTwitterRejects(t *testing.T) {
	sig := func(body, header string) *Request { return post(body, "x-twitter-webhooks-signature", header) }
	wantAllRejected(t, "twitter", nil, []rejectCase{
		{"body changed by one byte", sig(strings.Replace(twtBody, "equal", "Equal", 1), twtBodySig), secrets(twtSecret)},
		{"wrong secret", sig(twtBody, twtBodySig), secrets("another-secret")},
		{"no secrets", sig(twtBody, twtBodySig), nil},
		{"empty secret", sig(twtBody, twtBodySig), secrets("")},
		{"missing header", post(twtBody), secrets(twtSecret)},
		{"no sha256= prefix", sig(twtBody, strings.TrimPrefix(twtBodySig, "sha256=")), secrets(twtSecret)},
		{"sha1 prefix", sig(twtBody, strings.Replace(twtBodySig, "sha256", "sha1", 1)), secrets(twtSecret)},
		{"not base64", sig(twtBody, "sha256=!!!"), secrets(twtSecret)},
		{"signature of another body", sig(twtCRCToken, twtBodySig), secrets(twtSecret)},
	})
}

func TestTwitterMakesOneEventPerItemOfEachKind(t *testing.T) {
	in, err := adapter(t, "twitter").Interpret(post(twtBody), nil)
	if err != nil || len(in.Events) != 2 || in.EventType != "twitter.batch" {
		t.Fatalf("Interpret = %+v, %v", in, err)
	}
	fav, tweet := in.Events[0], in.Events[1]
	if fav.Type != "twitter.favorite" || fav.ProviderEventID != "2244994945:favorite:a7ba59eab0bfcba386f7acedac279542" ||
		!fav.OccurredAt.Equal(time.UnixMilli(1522082006140)) {
		t.Errorf("favorite: %+v", fav)
	}
	if tweet.Type != "twitter.tweet_create" || tweet.ProviderEventID != "2244994945:tweet_create:1050118621198921728" ||
		!tweet.OccurredAt.Equal(time.UnixMilli(1539202764000)) || !equalStrings(tweet.ObjectIDs, []string{"1050118621198921728", "2244994945"}) {
		t.Errorf("tweet: %+v", tweet)
	}
	in, err = adapter(t, "twitter").Interpret(post(twtFollow), nil)
	if err != nil || len(in.Events) != 2 || in.Events[0].Type != "twitter.follow" || in.Events[1].Type != "twitter.user_event" {
		t.Fatalf("Interpret(follow, revoke) = %+v, %v", in, err)
	}
	again, _ := adapter(t, "twitter").Interpret(post(twtFollow), nil)
	if in.Events[0].ProviderEventID == "" || again.Events[0].ProviderEventID != in.Events[0].ProviderEventID {
		t.Errorf("a follow's built id %q is not stable (%q)", in.Events[0].ProviderEventID, again.Events[0].ProviderEventID)
	}
}

func TestTwitterRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"for_user_id":"1"}`, "[]", `{"tweet_create_events":"x"}`} {
		_, err := adapter(t, "twitter").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

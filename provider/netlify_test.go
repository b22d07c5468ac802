package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"
)

// Netlify publishes no vector; these requests carry a JWS made with a known
// secret as https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature
// describes: HS256, claims iss "netlify" and sha256 of the body.
const (
	netlifySecret = "netlify-jws-secret-token"
	netlifyDeploy = `{"id":"5ebc34bf4fea0b01f02efa3a","site_id":"fa4dd95a-994e-4f89-8a7a-2d9e9fc36a32","build_id":"5ebc34bf4fea0b01f02efa38",` +
		`"state":"ready","name":"www-jvt-me","created_at":"2020-05-13T17:56:15.346Z","updated_at":"2020-05-13T17:58:56.738Z","branch":"master","context":"production"}`
)

func jws(secret, header, claims string) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	return signing + "." + enc.EncodeToString(mustDecodeB64(b64MAC(sha256.New, secret, signing)))
}

func mustDecodeB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func netlifyToken(secret, body string) string {
	sum := sha256.Sum256([]byte(body))
	return jws(secret, `{"alg":"HS256","typ":"JWT"}`, `{"iss":"netlify","sha256":"`+hex.EncodeToString(sum[:])+`"}`)
}

func netlifyRequest(token, body string, kv ...string) *Request {
	return post(body, append([]string{"X-Webhook-Signature", token}, kv...)...)
}

func TestNetlifyVerifiesSignedDeploy(t *testing.T) {
	r := netlifyRequest(netlifyToken(netlifySecret, netlifyDeploy), netlifyDeploy)
	wantVerified(t, adapter(t, "netlify").Verify(r, secrets("old secret", netlifySecret), nil))
}

func TestNetlifyRejects(t *testing.T) {
	sum := sha256.Sum256([]byte(netlifyDeploy))
	bodyHash := hex.EncodeToString(sum[:])
	good := netlifyToken(netlifySecret, netlifyDeploy)
	keys := secrets(netlifySecret)
	wantAllRejected(t, "netlify", nil, []rejectCase{
		{"tampered body", netlifyRequest(good, netlifyDeploy+" "), keys},
		{"wrong secret", netlifyRequest(good, netlifyDeploy), secrets("other")},
		{"no secrets", netlifyRequest(good, netlifyDeploy), nil},
		{"missing header", netlifyRequest("", netlifyDeploy), keys},
		{"other issuer", netlifyRequest(jws(netlifySecret, `{"alg":"HS256"}`, `{"iss":"someone","sha256":"`+bodyHash+`"}`), netlifyDeploy), keys},
		{"alg none", netlifyRequest(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))+"."+
			base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"netlify","sha256":"`+bodyHash+`"}`))+".", netlifyDeploy), keys},
		{"HS512 header", netlifyRequest(jws(netlifySecret, `{"alg":"HS512"}`, `{"iss":"netlify","sha256":"`+bodyHash+`"}`), netlifyDeploy), keys},
		{"no sha256 claim", netlifyRequest(jws(netlifySecret, `{"alg":"HS256"}`, `{"iss":"netlify"}`), netlifyDeploy), keys},
		{"not a JWS", netlifyRequest("a.b", netlifyDeploy), keys},
	})
}

func TestNetlifyInterpretsDeployAndSubmission(t *testing.T) {
	ev := oneEvent(t, adapter(t, "netlify"), netlifyRequest("", netlifyDeploy), nil)
	if ev.Type != "netlify.deploy.ready" || ev.ProviderEventID != "5ebc34bf4fea0b01f02efa3a:ready:2020-05-13T17:58:56.738Z" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"5ebc34bf4fea0b01f02efa3a", "fa4dd95a-994e-4f89-8a7a-2d9e9fc36a32"}) ||
		!ev.OccurredAt.Equal(time.Date(2020, 5, 13, 17, 58, 56, 738000000, time.UTC)) {
		t.Errorf("ObjectIDs = %v, OccurredAt = %v", ev.ObjectIDs, ev.OccurredAt)
	}
	named := oneEvent(t, adapter(t, "netlify"), netlifyRequest("", netlifyDeploy, "X-Netlify-Event", "deploy_created"), nil)
	if named.Type != "netlify.deploy_created" {
		t.Errorf("type with X-Netlify-Event: %q", named.Type)
	}
	sub := oneEvent(t, adapter(t, "netlify"), netlifyRequest("", `{"id":"sub1","form_id":"f1","site_id":"s1","created_at":"2020-05-13T17:56:15Z","data":{"email":"a@b.c"}}`), nil)
	if sub.Type != "netlify.submission_created" || sub.ProviderEventID != "sub1" {
		t.Errorf("submission: type %q id %q", sub.Type, sub.ProviderEventID)
	}
	_, err := adapter(t, "netlify").Interpret(netlifyRequest("", `{"id":"x"}`), nil)
	wantPermanent(t, err)
}

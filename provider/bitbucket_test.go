package provider

import (
	"testing"

	"github.com/intakehq/intake"
)

// Bitbucket publishes no signing vector; these requests are signed with a
// known secret as its docs describe: X-Hub-Signature: sha256=<hex HMAC of the body>.
const (
	bbSecret = "a bitbucket webhook secret"
	bbBody   = `{"push":{"changes":[]},"repository":{"uuid":"{b7c6e2f0-0000-4000-8000-000000000001}","full_name":"team/app"},"actor":{"nickname":"ann"}}`
)

func bbRequest(sig, body string, kv ...string) *Request {
	return post(body, append([]string{"X-Hub-Signature", sig}, kv...)...)
}

func TestBitbucketVerifiesSignedDelivery(t *testing.T) {
	sig := "sha256=" + sha256Hex(bbSecret, bbBody)
	wantVerified(t, adapter(t, "bitbucket").Verify(bbRequest(sig, bbBody), secrets("rotated-out", bbSecret), nil))
}

func TestBitbucketRejects(t *testing.T) {
	sig := "sha256=" + sha256Hex(bbSecret, bbBody)
	wantAllRejected(t, "bitbucket", nil, []rejectCase{
		{"tampered body", bbRequest(sig, bbBody+" "), secrets(bbSecret)},
		{"wrong secret", bbRequest(sig, bbBody), secrets("another secret")},
		{"no secrets", bbRequest(sig, bbBody), nil},
		{"empty secret", bbRequest("sha256="+sha256Hex("", bbBody), bbBody), secrets("")},
		{"missing header", bbRequest("", bbBody), secrets(bbSecret)},
		{"sha1 prefix", bbRequest("sha1="+sig[7:], bbBody), secrets(bbSecret)},
		{"not hex", bbRequest("sha256=zz", bbBody), secrets(bbSecret)},
	})
}

func TestBitbucketInterpretsPush(t *testing.T) {
	r := bbRequest("", bbBody, "X-Event-Key", "repo:push", "X-Request-UUID", "afe3b8a0-7c1e-4d8d-9a51-3c1b4e8f0a11")
	ev := oneEvent(t, adapter(t, "bitbucket"), r, nil)
	if ev.Type != "bitbucket.repo.push" || ev.ProviderEventID != "afe3b8a0-7c1e-4d8d-9a51-3c1b4e8f0a11" || ev.Kind != intake.KindEvent {
		t.Fatalf("got type %q id %q kind %q", ev.Type, ev.ProviderEventID, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"{b7c6e2f0-0000-4000-8000-000000000001}"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}

func TestBitbucketNamesPullRequestWithinItsRepository(t *testing.T) {
	body := `{"pullrequest":{"id":12,"title":"x"},"repository":{"uuid":"{r1}"}}`
	ev := oneEvent(t, adapter(t, "bitbucket"), bbRequest("", body, "X-Event-Key", "pullrequest:created"), nil)
	if ev.Type != "bitbucket.pullrequest.created" || !equalStrings(ev.ObjectIDs, []string{"{r1}", "{r1}/pullrequests/12"}) {
		t.Fatalf("got type %q objects %v", ev.Type, ev.ObjectIDs)
	}
}

func TestBitbucketRejectsDeliveryWithoutEventKeyPermanently(t *testing.T) {
	_, err := adapter(t, "bitbucket").Interpret(bbRequest("", bbBody), nil)
	wantPermanent(t, err)
}

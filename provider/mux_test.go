package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// Mux's SDK vector, from muxinc/mux-node-sdk,
// tests/api-resources/webhooks.test.ts (as of 28c52da, before the 14.0.0
// release removed the file): the payload, secret, timestamp and hash below
// verify at the timestamp, and fail six minutes later.
const (
	muxSDKSecret    = "SuperSecret123"
	muxSDKBody      = `{"test":"body"}`
	muxSDKTimestamp = "1565125718"
	muxSDKHash      = "854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7"
	muxEventBody    = `{"type":"video.asset.ready","object":{"type":"asset","id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"},"id":"3a56ac3d-33da-4366-855b-f592d898409d","environment":{"name":"Demo pages","id":"j0863n"},"data":{"status":"ready","id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"},"created_at":"2021-01-01T00:00:00.000000Z","attempts":[],"accessor_source":null,"accessor":null,"request_id":null}`
)

var muxSDKTime = time.Unix(1565125718, 0)

func muxRequest(header, body string, at time.Time) *Request {
	r := post(body, "mux-signature", header)
	r.ReceivedAt = at
	return r
}

func TestMuxVerifiesSDKVector(t *testing.T) {
	a := adapter(t, "mux")
	wantVerified(t, a.Verify(muxRequest("t="+muxSDKTimestamp+",v1="+muxSDKHash, muxSDKBody, muxSDKTime), secrets(muxSDKSecret), nil))
	// The SDK's "multiple signatures" case, with the secret second.
	wantVerified(t, a.Verify(muxRequest("t="+muxSDKTimestamp+",v1=invalid-sig,v1="+muxSDKHash, muxSDKBody, muxSDKTime), secrets("old", muxSDKSecret), nil))
}

func TestMuxJudgesOnlyTheSignaturesAge(t *testing.T) {
	a := adapter(t, "mux")
	h := "t=" + muxSDKTimestamp + ",v1=" + muxSDKHash
	wantVerified(t, a.Verify(muxRequest(h, muxSDKBody, muxSDKTime.Add(300*time.Second)), secrets(muxSDKSecret), nil))
	// The SDK lets a timestamp ahead of its clock pass.
	wantVerified(t, a.Verify(muxRequest(h, muxSDKBody, muxSDKTime.Add(-time.Hour)), secrets(muxSDKSecret), nil))
	wantVerified(t, a.Verify(muxRequest(h, muxSDKBody, muxSDKTime.Add(10*time.Minute)), secrets(muxSDKSecret), Config{"tolerance": "15m"}))
}

func TestMuxRejects(t *testing.T) {
	h := "t=" + muxSDKTimestamp + ",v1=" + muxSDKHash
	at := muxSDKTime
	wantAllRejected(t, "mux", nil, []rejectCase{
		{"six minutes old (SDK case)", muxRequest(h, muxSDKBody, at.Add(6*time.Minute)), secrets(muxSDKSecret)},
		{"another scheme (SDK case)", muxRequest("t="+muxSDKTimestamp+",v2="+muxSDKHash, muxSDKBody, at), secrets(muxSDKSecret)},
		{"no timestamp", muxRequest("v1="+muxSDKHash, muxSDKBody, at), secrets(muxSDKSecret)},
		{"timestamp changed", muxRequest("t=1565125719,v1="+muxSDKHash, muxSDKBody, at), secrets(muxSDKSecret)},
		{"body changed by one byte", muxRequest(h, strings.Replace(muxSDKBody, "body", "bodz", 1), at), secrets(muxSDKSecret)},
		{"wrong secret", muxRequest(h, muxSDKBody, at), secrets("SuperSecret124")},
		{"no secrets", muxRequest(h, muxSDKBody, at), nil},
		{"empty secret", muxRequest("t="+muxSDKTimestamp+",v1="+sha256Hex("", muxSDKTimestamp+"."+muxSDKBody), muxSDKBody, at), secrets("")},
		{"missing header", muxRequest("", muxSDKBody, at), secrets(muxSDKSecret)},
	})
}

func TestMuxInterpretsAnEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "mux"), muxRequest("", muxEventBody, received), nil)
	if ev.ProviderEventID != "3a56ac3d-33da-4366-855b-f592d898409d" || ev.Type != "mux.video.asset.ready" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"}) {
		t.Errorf("OccurredAt %v ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
}

func TestMuxRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", muxSDKBody, "[]"} {
		_, err := adapter(t, "mux").Interpret(muxRequest("", body, received), nil)
		wantPermanent(t, err)
	}
}

package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// SDK vector, from workos/workos-node, src/webhooks/webhooks.spec.ts and
// src/common/crypto/signature-provider.spec.ts: the secret "secret" and the
// body JSON.stringify(src/webhooks/fixtures/webhook.json). The SDK signs at
// the test's own clock, so the timestamp is fixed here and the signature
// computed for it with Node's crypto.createHmac, as the SDK does.
const (
	workosSDKSecret    = "secret"
	workosSDKBody      = `{"id":"wh_123","data":{"id":"directory_user_01FAEAJCR3ZBZ30D8BD1924TVG","state":"active","idp_id":"00u1e8mutl6wlH3lL4x7","object":"directory_user","last_name":"Lunchford","first_name":"Blair","directory_id":"directory_01F9M7F68PZP8QXP8G7X5QRHS7","created_at":"2021-06-25T19:07:33.155Z","updated_at":"2021-06-25T19:07:33.155Z","raw_attributes":{"name":{"givenName":"Blair","familyName":"Lunchford","middleName":"Elizabeth","honorificPrefix":"Ms."},"title":"Software Engineer","active":true,"groups":[],"locale":"en-US","schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],"addresses":[{"region":"CA","primary":true,"locality":"San Francisco","postalCode":"94016"}],"externalId":"00u1e8mutl6wlH3lL4x7","displayName":"Blair Lunchford","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":{"value":"2","displayName":"Kate Chapman"},"division":"Engineering","department":"Customer Success"}}},"event":"dsync.user.created","created_at":"2021-06-25T19:07:33.155Z"}`
	workosSDKTimestamp = "1741944410000" // received - 3 s, in milliseconds
	workosSDKSignature = "b15240a66ae0a93cfa1a173097fa6d128dcdd67fa489e4b35005ba5241a27b3d"
)

func workosRequest(header, body string, at time.Time) *Request {
	r := post(body, "WorkOS-Signature", header)
	r.ReceivedAt = at
	return r
}

func workosHeader(ts, sig string) string { return "t=" + ts + ", v1=" + sig }

func TestWorkOSVerifiesSDKVector(t *testing.T) {
	if got := sha256Hex(workosSDKSecret, workosSDKTimestamp+"."+workosSDKBody); got != workosSDKSignature {
		t.Fatalf("test signer gives %s, the vector says %s", got, workosSDKSignature)
	}
	r := workosRequest(workosHeader(workosSDKTimestamp, workosSDKSignature), workosSDKBody, received)
	wantVerified(t, adapter(t, "workos").Verify(r, secrets(workosSDKSecret), nil))
}

func TestWorkOSAcceptsRotatedSecret(t *testing.T) {
	r := workosRequest(workosHeader(workosSDKTimestamp, workosSDKSignature), workosSDKBody, received)
	wantVerified(t, adapter(t, "workos").Verify(r, secrets("the-old-secret", workosSDKSecret), nil))
}

func TestWorkOSRejects(t *testing.T) {
	good := workosHeader(workosSDKTimestamp, workosSDKSignature)
	keys := secrets(workosSDKSecret)
	// The SDK tests' failure cases, and the age beyond three minutes.
	wantAllRejected(t, "workos", nil, []rejectCase{
		{"empty header", workosRequest("", workosSDKBody, received), keys},
		{"empty signature hash", workosRequest("t="+workosSDKTimestamp+", v1=", workosSDKBody, received), keys},
		{"incorrect signature hash", workosRequest("t="+workosSDKTimestamp+", v1=99999", workosSDKBody, received), keys},
		{"incorrect payload", workosRequest(good, "invalid", received), keys},
		{"tampered body", workosRequest(good, strings.Replace(workosSDKBody, "dsync.user.created", "dsync.user.deleted", 1), received), keys},
		{"incorrect webhook secret", workosRequest(good, workosSDKBody, received), secrets("invalid")},
		{"no secrets", workosRequest(good, workosSDKBody, received), nil},
		{"timestamp outside tolerance", workosRequest(workosHeader("9999", workosSDKSignature), workosSDKBody, received), keys},
		{"older than three minutes", workosRequest(good, workosSDKBody, received.Add(177*time.Second+time.Millisecond)), keys},
		{"re-dated", workosRequest(workosHeader("1741944411000", workosSDKSignature), workosSDKBody, received), keys},
		{"timestamp in seconds", workosRequest(workosHeader("1741944410", sha256Hex(workosSDKSecret, "1741944410."+workosSDKBody)), workosSDKBody, received), keys},
		{"two timestamps", workosRequest(good+", t="+workosSDKTimestamp, workosSDKBody, received), keys},
	})
}

func TestWorkOSBoundsOnlyTheAge(t *testing.T) {
	// Like the SDKs: a signing time ahead of receipt is clock skew.
	r := workosRequest(workosHeader(workosSDKTimestamp, workosSDKSignature), workosSDKBody, received.Add(-time.Hour))
	wantVerified(t, adapter(t, "workos").Verify(r, secrets(workosSDKSecret), nil))
}

func TestWorkOSToleranceIsConfigurable(t *testing.T) {
	r := workosRequest(workosHeader(workosSDKTimestamp, workosSDKSignature), workosSDKBody, received.Add(200*time.Second))
	wantRejected(t, adapter(t, "workos").Verify(r, secrets(workosSDKSecret), nil))
	wantVerified(t, adapter(t, "workos").Verify(r, secrets(workosSDKSecret), Config{"tolerance": float64(240)}))
}

func TestWorkOSInterpretsSDKFixture(t *testing.T) {
	ev := oneEvent(t, adapter(t, "workos"), workosRequest("", workosSDKBody, received), nil)
	if ev.ProviderEventID != "wh_123" || ev.Type != "workos.dsync.user.created" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !equalStrings(ev.ObjectIDs, []string{"directory_user_01FAEAJCR3ZBZ30D8BD1924TVG"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2021, 6, 25, 19, 7, 33, 155000000, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v, want %v", ev.OccurredAt, want)
	}
	if string(ev.Data) != workosSDKBody || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v)", ev.Data, ev.DataTruncated)
	}
}

func TestWorkOSRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"invalid", `{"id":"event_1"}`, "[]"} {
		_, err := adapter(t, "workos").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

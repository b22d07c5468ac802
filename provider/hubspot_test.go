package provider

import (
	"crypto/sha256"
	"testing"
	"time"
)

// HubSpot's SDK examples, from HubSpot/hubspot-api-python,
// tests/spec/utils/test_signature.py: one request signed as v1, v2 and v3
// (the v3 timestamp is the test's 15000000 ms).
const (
	hsDocSecret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
	hsDocBody   = "{'example_field':'example_value'}"
	hsDocURL    = "https://www.example.com/webhook_uri"
	hsDocV1     = "69fc6631a867edd4f9e9e627fc5c1148e3fbdd8b21837b6d2b8901c1fa57f750"
	hsDocV2     = "4fe4e3a7d3cf09db53be39d0a58130e2aaba074ec123a9e355b876a689a1c383"
	hsDocV2GET  = "eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e"
	hsDocV3     = "HPW73RUtKmcYoEDADG0s6MmGFWUzWJKAW07r8RDgcQw="
	hsDocV3TS   = "15000000"
)

var hsDocV3Time = time.UnixMilli(15000000)

func hsRequest(method, url, body string, at time.Time, kv ...string) *Request {
	r := post(body, kv...)
	r.Method, r.URL, r.ReceivedAt = method, url, at
	return r
}

func TestHubSpotVerifiesSDKExamples(t *testing.T) {
	a := adapter(t, "hubspot")
	keys := secrets("old-client-secret", hsDocSecret)
	wantVerified(t, a.Verify(hsRequest("POST", hsDocURL, hsDocBody, received, "X-HubSpot-Signature", hsDocV1), keys, nil))
	wantVerified(t, a.Verify(hsRequest("POST", hsDocURL, hsDocBody, received,
		"X-HubSpot-Signature", hsDocV2, "X-HubSpot-Signature-Version", "v2"), keys, nil))
	wantVerified(t, a.Verify(hsRequest("GET", hsDocURL, "", received,
		"X-HubSpot-Signature", hsDocV2GET, "X-HubSpot-Signature-Version", "v2"), keys, nil))
	wantVerified(t, a.Verify(hsRequest("POST", hsDocURL, hsDocBody, hsDocV3Time.Add(4*time.Minute),
		"X-HubSpot-Signature-v3", hsDocV3, "X-HubSpot-Request-Timestamp", hsDocV3TS), keys, nil))
}

func TestHubSpotV3DecodesTheListedCharactersInTheURI(t *testing.T) {
	// HubSpot signs the URI with %3A, %2F, %3F, %40 … decoded.
	url := "https://intake.example.com/webhooks/tok?portal=a%3Ab%40c"
	signed := "https://intake.example.com/webhooks/tok?portal=a:b@c"
	sig := b64MAC(sha256.New, hsDocSecret, "POST"+signed+hsDocBody+unixMilliString(received))
	r := hsRequest("POST", url, hsDocBody, received, "X-HubSpot-Signature-v3", sig, "X-HubSpot-Request-Timestamp", unixMilliString(received))
	wantVerified(t, adapter(t, "hubspot").Verify(r, secrets(hsDocSecret), nil))
}

func unixMilliString(t time.Time) string { return itoa64(t.UnixMilli()) }

func TestHubSpotRejects(t *testing.T) {
	v3 := func(at time.Time, body, sig, ts string) *Request {
		return hsRequest("POST", hsDocURL, body, at, "X-HubSpot-Signature-v3", sig, "X-HubSpot-Request-Timestamp", ts)
	}
	keys := secrets(hsDocSecret)
	weakWithV3 := v3(hsDocV3Time, hsDocBody, "AAAA", hsDocV3TS)
	weakWithV3.Header.Set("X-HubSpot-Signature", hsDocV1)
	wantAllRejected(t, "hubspot", nil, []rejectCase{
		{"v3 tampered body", v3(hsDocV3Time, hsDocBody+" ", hsDocV3, hsDocV3TS), keys},
		{"v3 re-dated", v3(hsDocV3Time, hsDocBody, hsDocV3, "15000001"), keys},
		{"v3 older than five minutes", v3(hsDocV3Time.Add(5*time.Minute+time.Millisecond), hsDocBody, hsDocV3, hsDocV3TS), keys},
		{"v3 wrong secret", v3(hsDocV3Time, hsDocBody, hsDocV3, hsDocV3TS), secrets("other")},
		{"v3 no secrets", v3(hsDocV3Time, hsDocBody, hsDocV3, hsDocV3TS), nil},
		{"v3 missing timestamp", v3(hsDocV3Time, hsDocBody, hsDocV3, ""), keys},
		{"v3 timestamp in seconds", v3(hsDocV3Time, hsDocBody, hsDocV3, "15000"), keys},
		{"v3 other URL", hsRequest("POST", hsDocURL+"/x", hsDocBody, hsDocV3Time, "X-HubSpot-Signature-v3", hsDocV3, "X-HubSpot-Request-Timestamp", hsDocV3TS), keys},
		{"v3 other method", hsRequest("PUT", hsDocURL, hsDocBody, hsDocV3Time, "X-HubSpot-Signature-v3", hsDocV3, "X-HubSpot-Request-Timestamp", hsDocV3TS), keys},
		{"bad v3 is not rescued by a good v1", weakWithV3, keys},
		{"v1 tampered body", hsRequest("POST", hsDocURL, hsDocBody+" ", received, "X-HubSpot-Signature", hsDocV1), keys},
		{"v1 empty secret", hsRequest("POST", hsDocURL, hsDocBody, received, "X-HubSpot-Signature", sha256Hash(hsDocBody)), secrets("")},
		{"v2 under v1", hsRequest("POST", hsDocURL, hsDocBody, received, "X-HubSpot-Signature", hsDocV2), keys},
		{"unknown version", hsRequest("POST", hsDocURL, hsDocBody, received, "X-HubSpot-Signature", hsDocV1, "X-HubSpot-Signature-Version", "v9"), keys},
		{"no signature", hsRequest("POST", hsDocURL, hsDocBody, received), keys},
	})
}

func TestHubSpotSplitsBatchWithStableItemIDs(t *testing.T) {
	// Shaped like the example of https://developers.hubspot.com/docs/api/webhooks.
	body := `[{"objectId":1246965,"propertyName":"lifecyclestage","propertyValue":"subscriber","changeSource":"ACADEMY",` +
		`"eventId":3816279340,"subscriptionId":25,"portalId":33,"appId":1160452,"occurredAt":1462216307945,` +
		`"subscriptionType":"contact.propertyChange","attemptNumber":0},` +
		`{"objectId":1246978,"changeSource":"IMPORT","eventId":3816279480,"subscriptionId":22,"portalId":33,"appId":1160452,` +
		`"occurredAt":1462216307945,"subscriptionType":"contact.creation","attemptNumber":0}]`
	in, err := adapter(t, "hubspot").Interpret(hsRequest("POST", hsDocURL, body, received), nil)
	if err != nil || len(in.Events) != 2 {
		t.Fatalf("Interpret = %+v, %v; want two events", in, err)
	}
	a, b := in.Events[0], in.Events[1]
	if a.Type != "hubspot.contact.propertyChange" || a.ProviderEventID != "33:25:3816279340:1246965:lifecyclestage" {
		t.Errorf("first: type %q id %q", a.Type, a.ProviderEventID)
	}
	if b.Type != "hubspot.contact.creation" || b.ProviderEventID != "33:22:3816279480:1246978" || !equalStrings(b.ObjectIDs, []string{"1246978"}) {
		t.Errorf("second: type %q id %q objects %v", b.Type, b.ProviderEventID, b.ObjectIDs)
	}
	if !a.OccurredAt.Equal(time.UnixMilli(1462216307945)) || in.ProviderEventID != "" || in.EventType != "hubspot.batch" {
		t.Errorf("occurred %v message %q %q", a.OccurredAt, in.ProviderEventID, in.EventType)
	}
	// A retry bumps attemptNumber; the item keeps its id.
	retry, _ := adapter(t, "hubspot").Interpret(hsRequest("POST", hsDocURL,
		`[{"objectId":1246978,"changeSource":"IMPORT","eventId":3816279480,"subscriptionId":22,"portalId":33,"appId":1160452,`+
			`"occurredAt":1462216307945,"subscriptionType":"contact.creation","attemptNumber":3}]`, received), nil)
	if len(retry.Events) != 1 || retry.Events[0].ProviderEventID != b.ProviderEventID {
		t.Errorf("retried item named %+v", retry.Events)
	}
}

func TestHubSpotRejectsNonBatchBodiesPermanently(t *testing.T) {
	for _, body := range []string{`{"eventId":1}`, `[1]`, `[{"eventId":1}]`, `null`, ``} {
		_, err := adapter(t, "hubspot").Interpret(hsRequest("POST", hsDocURL, body, received), nil)
		wantPermanent(t, err)
	}
}

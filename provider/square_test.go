package provider

import (
	"crypto/sha1"
	"testing"
)

// Square's SDK example, from square/square-python-sdk,
// tests/utilities/test_webhooks_helper.py.
const (
	squareDocBody      = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
	squareDocSignature = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
	squareDocKey       = "Ibxx_5AKakO-3qeNVR61Dw"
	squareDocURL       = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
)

func squareRequest(url, sig, body string) *Request {
	r := post(body, "x-square-hmacsha256-signature", sig)
	r.URL = url
	return r
}

func TestSquareVerifiesSDKExample(t *testing.T) {
	r := squareRequest(squareDocURL, squareDocSignature, squareDocBody)
	wantVerified(t, adapter(t, "square").Verify(r, secrets("MCmhFRxGX82xMwg5FsaoQA", squareDocKey), nil))
}

func TestSquareRejects(t *testing.T) {
	formatted := "{\n  \"merchant_id\": \"MLEFBHHSJGVHD\"\n}"
	wantAllRejected(t, "square", nil, []rejectCase{
		// The SDK's own negative cases.
		{"url mismatch", squareRequest("https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9", squareDocSignature, squareDocBody), secrets(squareDocKey)},
		{"wrong key", squareRequest(squareDocURL, squareDocSignature, squareDocBody), secrets("MCmhFRxGX82xMwg5FsaoQA")},
		{"wrong signature", squareRequest(squareDocURL, "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", squareDocBody), secrets(squareDocKey)},
		{"body mismatch", squareRequest(squareDocURL, squareDocSignature, squareDocBody[:60]+"6"+squareDocBody[61:]), secrets(squareDocKey)},
		{"body reformatted", squareRequest(squareDocURL, squareDocSignature, formatted), secrets(squareDocKey)},
		{"empty key", squareRequest(squareDocURL, squareDocSignature, squareDocBody), secrets("")},
		{"public URL unknown", squareRequest("", squareDocSignature, squareDocBody), secrets(squareDocKey)},
		{"missing header", squareRequest(squareDocURL, "", squareDocBody), secrets(squareDocKey)},
	})
}

func TestSquareFallsBackToLegacySHA1OnlyWithoutSHA256(t *testing.T) {
	legacy := b64MAC(sha1.New, squareDocKey, squareDocURL+squareDocBody)
	r := squareRequest(squareDocURL, "", squareDocBody)
	r.Header.Set("x-square-signature", legacy)
	wantVerified(t, adapter(t, "square").Verify(r, secrets(squareDocKey), nil))
	r.Header.Set("x-square-hmacsha256-signature", "AAAA")
	wantRejected(t, adapter(t, "square").Verify(r, secrets(squareDocKey), nil))
}

func TestSquareInterpretsEvent(t *testing.T) {
	ev := oneEvent(t, adapter(t, "square"), squareRequest(squareDocURL, "", squareDocBody), nil)
	if ev.Type != "square.webhooks.test_notification" || ev.ProviderEventID != "ac3ac95b-f97d-458c-a6e6-18981597e05f" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"bc368e64-01aa-407e-b46e-3231809b1129"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
}

package provider

import (
	"testing"
	"time"
)

// Paddle's published example, from PaddleHQ/paddle-go-sdk,
// example_webhook_verifier_test.go: a price.created notification.
const (
	paddleDocSignature = `ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8`
	paddleDocPayload   = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`
	paddleDocSecret    = `pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr`
)

var paddleDocTime = time.Unix(1710929255, 0)

func paddleRequest(sig, body string, at time.Time) *Request {
	r := post(body, "Paddle-Signature", sig)
	r.ReceivedAt = at
	return r
}

func TestPaddleVerifiesSDKExample(t *testing.T) {
	r := paddleRequest(paddleDocSignature, paddleDocPayload, paddleDocTime.Add(2*time.Second))
	wantVerified(t, adapter(t, "paddle").Verify(r, secrets(paddleDocSecret), nil))
}

func TestPaddleAcceptsRotatedSecretsAndSeveralSignatures(t *testing.T) {
	r := paddleRequest(paddleDocSignature, paddleDocPayload, paddleDocTime)
	wantVerified(t, adapter(t, "paddle").Verify(r, secrets("pdl_ntfset_old", paddleDocSecret), nil))
	two := "ts=1710929255;h1=" + sha256Hex("pdl_ntfset_new", "1710929255:"+paddleDocPayload) + ";h1=" + paddleDocSignature[len("ts=1710929255;h1="):]
	wantVerified(t, adapter(t, "paddle").Verify(paddleRequest(two, paddleDocPayload, paddleDocTime), secrets(paddleDocSecret), nil))
}

func TestPaddleRejects(t *testing.T) {
	at := paddleDocTime
	wantAllRejected(t, "paddle", nil, []rejectCase{
		{"tampered body", paddleRequest(paddleDocSignature, paddleDocPayload+" ", at), secrets(paddleDocSecret)},
		{"wrong secret", paddleRequest(paddleDocSignature, paddleDocPayload, at), secrets("pdl_ntfset_other")},
		{"no secrets", paddleRequest(paddleDocSignature, paddleDocPayload, at), nil},
		{"missing header", paddleRequest("", paddleDocPayload, at), secrets(paddleDocSecret)},
		{"stale beyond Paddle's five seconds", paddleRequest(paddleDocSignature, paddleDocPayload, at.Add(6*time.Second)), secrets(paddleDocSecret)},
		{"re-dated", paddleRequest("ts=1710929256;h1="+paddleDocSignature[len("ts=1710929255;h1="):], paddleDocPayload, at), secrets(paddleDocSecret)},
		{"two timestamps", paddleRequest("ts=1;"+paddleDocSignature, paddleDocPayload, at), secrets(paddleDocSecret)},
		{"no h1", paddleRequest("ts=1710929255", paddleDocPayload, at), secrets(paddleDocSecret)},
	})
}

func TestPaddleBoundsOnlyTheAge(t *testing.T) {
	// Paddle's SDK bounds only how old a signature is; one from a sender
	// whose clock runs ahead is still Paddle's.
	r := paddleRequest(paddleDocSignature, paddleDocPayload, paddleDocTime.Add(-time.Hour))
	wantVerified(t, adapter(t, "paddle").Verify(r, secrets(paddleDocSecret), nil))
	late := paddleRequest(paddleDocSignature, paddleDocPayload, paddleDocTime.Add(time.Minute))
	wantVerified(t, adapter(t, "paddle").Verify(late, secrets(paddleDocSecret), Config{"tolerance": "2m"}))
}

func TestPaddleInterpretsPriceCreated(t *testing.T) {
	ev := oneEvent(t, adapter(t, "paddle"), paddleRequest("", paddleDocPayload, paddleDocTime), nil)
	if ev.Type != "paddle.price.created" || ev.ProviderEventID != "evt_01hsdn97563968dy0szkmgjwh3" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"pri_01hsdn96k2hxjzsq5yerecdj9j"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if !ev.OccurredAt.Equal(time.Date(2024, 3, 20, 10, 7, 35, 590857000, time.UTC)) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
}

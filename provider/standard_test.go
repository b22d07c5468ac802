package provider

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The Standard Webhooks libraries' signing vector, from
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
// (TestWebhookSign; the other libraries share it).
const (
	swSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTimestamp = "1614265330"
	swBody      = `{"test": 2432232314}`
	swSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// The libraries' Ed25519 vector, from
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_asymmetric_test.go
// (TestAsymmetricWebhookSign): the private seed below signs the same message.
const (
	swEd25519Seed      = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	swEd25519Signature = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
)

func swVectorReceivedAt() time.Time { return time.Unix(1614265330, 0).Add(3 * time.Second) }

func swRequest(id, ts, sig, body string, at time.Time) *Request {
	return &Request{
		Method:     "POST",
		Header:     headers("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig),
		Body:       []byte(body),
		ReceivedAt: at,
	}
}

// signStandard signs as a Standard Webhooks sender with a whsec_ secret.
func signStandard(secret, id, ts, body string) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func swPublicKey() string {
	seed, _ := base64.StdEncoding.DecodeString(swEd25519Seed)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return "whpk_" + base64.StdEncoding.EncodeToString(pub)
}

func TestStandardVerifiesSpecLibraryVector(t *testing.T) {
	if got := signStandard(swSecret, swMsgID, swTimestamp, swBody); got != swSignature {
		t.Fatalf("test signer gives %s, the spec vector says %s", got, swSignature)
	}
	r := swRequest(swMsgID, swTimestamp, swSignature, swBody, swVectorReceivedAt())
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swSecret), nil))
}

func TestStandardVerifiesSpecLibraryEd25519Vector(t *testing.T) {
	r := swRequest(swMsgID, swTimestamp, swEd25519Signature, swBody, swVectorReceivedAt())
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swPublicKey()), nil))
}

func TestStandardAcceptsSecretWithoutPrefix(t *testing.T) {
	r := swRequest(swMsgID, swTimestamp, swSignature, swBody, swVectorReceivedAt())
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(strings.TrimPrefix(swSecret, "whsec_")), nil))
}

func TestStandardAcceptsAnyOfSeveralSignatures(t *testing.T) {
	// The libraries' "valid multi sig is valid" case: unknown versions and
	// wrong signatures around the right one.
	sig := strings.Join([]string{
		"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
		"v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
		swSignature,
		"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
	}, " ")
	r := swRequest(swMsgID, swTimestamp, sig, swBody, swVectorReceivedAt())
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swSecret), nil))
}

func TestStandardAcceptsRotatedSecrets(t *testing.T) {
	old := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the retired signing key"))
	for name, keys := range map[string][][]byte{
		"second hmac secret signed":   secrets(old, swSecret),
		"second public key signed":    secrets(old, swPublicKey()),
		"public key beside an hmac":   secrets(swPublicKey(), swSecret),
		"garbled secret is skipped":   secrets("whsec_***", swSecret),
		"short public key is skipped": secrets("whpk_AAAA", swSecret),
	} {
		t.Run(name, func(t *testing.T) {
			sig := swSignature + " " + swEd25519Signature
			r := swRequest(swMsgID, swTimestamp, sig, swBody, swVectorReceivedAt())
			wantVerified(t, adapter(t, "standard").Verify(r, keys, nil))
		})
	}
}

func TestStandardAcceptsSvixHeaderNames(t *testing.T) {
	r := &Request{
		Header:     headers("svix-id", swMsgID, "svix-timestamp", swTimestamp, "svix-signature", swSignature),
		Body:       []byte(swBody),
		ReceivedAt: swVectorReceivedAt(),
	}
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swSecret), nil))
}

func TestStandardFindsHeadersStoredInLowerCase(t *testing.T) {
	r := swRequest(swMsgID, swTimestamp, swSignature, swBody, swVectorReceivedAt())
	r.Header = map[string][]string{
		"webhook-id": {swMsgID}, "webhook-timestamp": {swTimestamp}, "webhook-signature": {swSignature},
	}
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swSecret), nil))
}

func TestStandardRejects(t *testing.T) {
	at := swVectorReceivedAt()
	cases := []struct {
		name    string
		r       *Request
		secrets [][]byte
	}{
		{"tampered body", swRequest(swMsgID, swTimestamp, swSignature, `{"test": 2432232315}`, at), secrets(swSecret)},
		{"tampered id", swRequest("msg_other", swTimestamp, swSignature, swBody, at), secrets(swSecret)},
		{"wrong secret", swRequest(swMsgID, swTimestamp, swSignature, swBody, at),
			secrets("whsec_" + base64.StdEncoding.EncodeToString([]byte("not the key")))},
		{"no secrets", swRequest(swMsgID, swTimestamp, swSignature, swBody, at), nil},
		{"empty secret", swRequest(swMsgID, swTimestamp, signStandard("whsec_", swMsgID, swTimestamp, swBody), swBody, at),
			secrets("whsec_")},
		{"stale timestamp", swRequest(swMsgID, swTimestamp, swSignature, swBody, at.Add(5*time.Minute+time.Second)), secrets(swSecret)},
		{"future timestamp", swRequest(swMsgID, swTimestamp, swSignature, swBody, at.Add(-5*time.Minute-4*time.Second)), secrets(swSecret)},
		{"timestamp not a number", swRequest(swMsgID, "2021-02-25T15:02:10Z", swSignature, swBody, at), secrets(swSecret)},
		{"missing id", swRequest("", swTimestamp, swSignature, swBody, at), secrets(swSecret)},
		{"missing timestamp", swRequest(swMsgID, "", swSignature, swBody, at), secrets(swSecret)},
		{"missing signature", swRequest(swMsgID, swTimestamp, "", swBody, at), secrets(swSecret)},
		{"signature without version", swRequest(swMsgID, swTimestamp, strings.TrimPrefix(swSignature, "v1,"), swBody, at), secrets(swSecret)},
		{"unknown version only", swRequest(swMsgID, swTimestamp, "v2,"+strings.TrimPrefix(swSignature, "v1,"), swBody, at), secrets(swSecret)},
		{"hmac signature under v1a", swRequest(swMsgID, swTimestamp, "v1a,"+strings.TrimPrefix(swSignature, "v1,"), swBody, at), secrets(swSecret)},
		{"ed25519 signature under v1", swRequest(swMsgID, swTimestamp, "v1,"+strings.TrimPrefix(swEd25519Signature, "v1a,"), swBody, at), secrets(swPublicKey())},
		{"partial ed25519 signature", swRequest(swMsgID, swTimestamp, "v1a,", swBody, at), secrets(swPublicKey())},
		{"public key given an hmac signature", swRequest(swMsgID, swTimestamp, swSignature, swBody, at), secrets(swPublicKey())},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, "standard").Verify(c.r, c.secrets, nil))
		})
	}
}

func TestStandardJudgesTimestampAgainstReceivedTimeNotNow(t *testing.T) {
	// Signed in 2021 and verified today: it passes because it was received
	// within the tolerance, which is what a replay of an old message needs.
	r := swRequest(swMsgID, swTimestamp, swSignature, swBody, time.Unix(1614265330, 0).Add(-4*time.Minute))
	wantVerified(t, adapter(t, "standard").Verify(r, secrets(swSecret), nil))
}

func TestStandardToleranceIsConfigurable(t *testing.T) {
	a := adapter(t, "standard")
	r := swRequest(swMsgID, swTimestamp, swSignature, swBody, time.Unix(1614265330, 0).Add(8*time.Minute))
	wantRejected(t, a.Verify(r, secrets(swSecret), nil))
	wantVerified(t, a.Verify(r, secrets(swSecret), Config{"tolerance": "10m"}))
	wantVerified(t, a.Verify(r, secrets(swSecret), Config{"tolerance": float64(600)}))

	for _, bad := range []Config{{"tolerance": "soon"}, {"tolerance": "-1m"}, {"tolerance": true}} {
		if err := a.ValidateConfig(bad); err == nil {
			t.Errorf("ValidateConfig(%v) = nil, want an error", bad)
		}
	}
}

func TestStandardInterpretsIDTypeAndTime(t *testing.T) {
	body := `{"type":"invoice.paid","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"inv_1"}}`
	r := swRequest("msg_2", "1667507170", "unused", body, received)
	ev := oneEvent(t, adapter(t, "standard"), r, nil)
	if ev.ProviderEventID != "msg_2" || ev.Type != "standard.invoice.paid" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if want := time.Date(2022, 11, 3, 20, 26, 10, 344522000, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v, want %v", ev.OccurredAt, want)
	}
	if string(ev.Data) != body || ev.DataTruncated {
		t.Errorf("Data = %s (truncated %v), want the body", ev.Data, ev.DataTruncated)
	}
}

func TestStandardTypesUntypedPayloadAsMessage(t *testing.T) {
	r := &Request{Header: headers("svix-id", "msg_3"), Body: []byte(swBody)}
	ev := oneEvent(t, adapter(t, "standard"), r, nil)
	if ev.Type != "standard.message" || ev.ProviderEventID != "msg_3" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
}

func TestStandardRejectsNonJSONBodyPermanently(t *testing.T) {
	for _, body := range []string{"hello", "", "[1,2]", "null", `{"a":1} trailing`} {
		_, err := adapter(t, "standard").Interpret(&Request{Header: headers("webhook-id", "m"), Body: []byte(body)}, nil)
		wantPermanent(t, err)
	}
}

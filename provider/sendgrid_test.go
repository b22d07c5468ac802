package provider

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"testing"
	"time"
)

// SendGrid's own vector, from sendgrid/sendgrid-go,
// helpers/eventwebhook/eventwebhook_test.go (TestVerifySignature): the
// payload is that test's map encoded by json.Marshal (keys sorted). The
// private key beside it signs this file's other requests.
const (
	sgDocPublicKey  = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	sgDocPrivateKey = "MHcCAQEEIEQmZgBEh9DcU9zMl34czK3xov4AYvm9P3r7rNB2dNXtoAoGCCqGSM49AwEHoUQDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	sgDocSignature  = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
	sgDocTimestamp  = "1588788367"
	sgDocPayload    = `{"category":"example_payload","event":"test_event","message_id":"message_id"}`
)

func sgRequest(sig, ts, body string) *Request {
	return post(body, sendgridSignatureHeader, sig, sendgridTimestampHeader, ts)
}

// sgSign signs as SendGrid does, with the SDK test's private key.
func sgSign(ts, body string) string {
	der, _ := base64.StdEncoding.DecodeString(sgDocPrivateKey)
	key, err := x509.ParseECPrivateKey(der)
	if err != nil {
		panic(err)
	}
	digest := sha256.Sum256([]byte(ts + body))
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

func TestSendGridVerifiesSDKVector(t *testing.T) {
	r := sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload)
	wantVerified(t, adapter(t, "sendgrid").Verify(r, secrets(sgDocPublicKey), nil))
}

func TestSendGridAcceptsRotatedAndPEMKeys(t *testing.T) {
	r := sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload)
	pem := "-----BEGIN PUBLIC KEY-----\n" + sgDocPublicKey[:64] + "\n" + sgDocPublicKey[64:] + "\n-----END PUBLIC KEY-----\n"
	wantVerified(t, adapter(t, "sendgrid").Verify(r, secrets("not a key", "MFkwEw==", pem), nil))
}

func TestSendGridRejects(t *testing.T) {
	other, _ := ecdsa.GenerateKey(ecdsaP256(), rand.Reader)
	otherDER, _ := x509.MarshalPKIXPublicKey(&other.PublicKey)
	otherKey := base64.StdEncoding.EncodeToString(otherDER)
	keys := secrets(sgDocPublicKey)
	wantAllRejected(t, "sendgrid", nil, []rejectCase{
		// The SDK's own negative cases.
		{"other payload", sgRequest(sgDocSignature, sgDocTimestamp, "this is not valid payload for the given signature"), keys},
		{"corrupted signature", sgRequest(sgDocSignature+"causing failure", sgDocTimestamp, sgDocPayload), keys},
		{"other timestamp", sgRequest(sgDocSignature, "invalid timestamp", sgDocPayload), keys},
		{"missing timestamp", sgRequest(sgDocSignature, "", sgDocPayload), keys},
		{"missing signature", sgRequest("", sgDocTimestamp, sgDocPayload), keys},
		{"other key", sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload), secrets(otherKey)},
		{"no secrets", sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload), nil},
		{"an HMAC secret is no key", sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload), secrets("hmac-secret")},
	})
}

func TestSendGridJudgesTimestampOnlyWhenToleranceIsSet(t *testing.T) {
	// SendGrid documents no tolerance: a 2020 signature received now still
	// verifies unless the connection asks for one.
	r := sgRequest(sgDocSignature, sgDocTimestamp, sgDocPayload)
	wantVerified(t, adapter(t, "sendgrid").Verify(r, secrets(sgDocPublicKey), nil))
	wantRejected(t, adapter(t, "sendgrid").Verify(r, secrets(sgDocPublicKey), Config{"tolerance": "10m"}))
	fresh := sgRequest(sgSign(unix(received), sgDocPayload), unix(received), sgDocPayload)
	wantVerified(t, adapter(t, "sendgrid").Verify(fresh, secrets(sgDocPublicKey), Config{"tolerance": "10m"}))
	future := sgRequest(sgSign(unix(received.Add(11*time.Minute)), sgDocPayload), unix(received.Add(11*time.Minute)), sgDocPayload)
	wantRejected(t, adapter(t, "sendgrid").Verify(future, secrets(sgDocPublicKey), Config{"tolerance": "10m"}))
}

func TestSendGridSplitsBatchIntoEventsWithTheirOwnIDs(t *testing.T) {
	// Shaped like the examples of
	// https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event.
	body := `[` +
		`{"email":"example@test.com","timestamp":1513299569,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"processed",` +
		`"category":"cat facts","sg_event_id":"sg_event_id","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"},` +
		`{"email":"example@test.com","timestamp":1513299570,"event":"delivered","sg_event_id":"rWVYmVk90MjZJ9iohOBa3w",` +
		`"sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","response":"250 OK"},` +
		`{"email":"example@test.com","timestamp":1513299571,"event":"open","useragent":"Mozilla/4.0"}]`
	r := sgRequest("", "", body)
	in, err := adapter(t, "sendgrid").Interpret(r, nil)
	if err != nil || len(in.Events) != 3 {
		t.Fatalf("Interpret = %+v, %v; want three events", in, err)
	}
	if in.ProviderEventID != "" || in.EventType != "sendgrid.batch" {
		t.Errorf("message id %q type %q", in.ProviderEventID, in.EventType)
	}
	first, second, third := in.Events[0], in.Events[1], in.Events[2]
	if first.Type != "sendgrid.processed" || first.ProviderEventID != "sg_event_id" || !first.OccurredAt.Equal(time.Unix(1513299569, 0)) {
		t.Errorf("first: type %q id %q at %v", first.Type, first.ProviderEventID, first.OccurredAt)
	}
	if !equalStrings(second.ObjectIDs, []string{"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0", "14c5d75ce93.dfd.64b469"}) {
		t.Errorf("second objects %v", second.ObjectIDs)
	}
	// An item without sg_event_id is named by its content, the same in any batch.
	alone, _ := adapter(t, "sendgrid").Interpret(sgRequest("", "", `[{"event":"open","email":"example@test.com","timestamp":1513299571,"useragent":"Mozilla/4.0"}]`), nil)
	if third.ProviderEventID == "" || len(alone.Events) != 1 || alone.Events[0].ProviderEventID != third.ProviderEventID {
		t.Errorf("unnamed item: %q vs %+v", third.ProviderEventID, alone.Events)
	}
}

func TestSendGridRejectsNonBatchBodiesPermanently(t *testing.T) {
	for _, body := range []string{sgDocPayload, `[{"email":"x"}]`, `[1]`, ``} {
		_, err := adapter(t, "sendgrid").Interpret(sgRequest("", "", body), nil)
		wantPermanent(t, err)
	}
}

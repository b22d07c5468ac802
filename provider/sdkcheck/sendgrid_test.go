package sdkcheck

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/provider/fixtures"
	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"
)

const (
	sendgridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendgridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// sendgridKeyPair is a fresh ECDSA P-256 key pair: the private key as
// intake's samples take it (base64 PKCS #8), and the verification key as
// SendGrid shows it (base64 PKIX), which the connection holds.
func sendgridKeyPair(t *testing.T) (private, verification string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	private = base64.StdEncoding.EncodeToString(der)
	verification, err = fixtures.ConnectionSecret("sendgrid", private)
	if err != nil {
		t.Fatal(err)
	}
	return private, verification
}

// sendgrid-go verifies (eventwebhook.VerifySignature; SendGrid signs with
// its own private key, so nothing else can sign): intake's sample, signed
// with a test key pair, must verify with both, and its tamperings with
// neither. SendGrid documents no tolerance and its SDK judges no time.
func TestSendGridAgreesWithSendGridGo(t *testing.T) {
	private, verification := sendgridKeyPair(t)
	otherPrivate, _ := sendgridKeyPair(t)
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	good := sample(t, "sendgrid", private, now)
	sig := good.Header.Get(sendgridSignatureHeader)

	pub, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(verification)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, "sendgrid", []string{verification}, nil, func(r *provider.Request) bool {
		ok, err := eventwebhook.VerifySignature(pub, r.Body, r.Header.Get(sendgridSignatureHeader), r.Header.Get(sendgridTimestampHeader))
		return ok && err == nil
	}, []delivery{
		{"as signed", good, true},
		{"received a day after it was signed", receivedAt(good, now.Add(24*time.Hour)), true},
		{"body changed by one byte", withBody(good, oneByte(good.Body)), false},
		{"signature changed by one character", withHeader(good, sendgridSignatureHeader, flipBase64(sig)), false},
		{"timestamp moved by a second", withHeader(good, sendgridTimestampHeader, strconv.FormatInt(now.Unix()+1, 10)), false},
		{"signed with another key pair", sample(t, "sendgrid", otherPrivate, now), false},
		{"no signature", withHeader(good, sendgridSignatureHeader, ""), false},
	})
}

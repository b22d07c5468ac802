package inbox

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// sign is a Standard Webhooks signature made as the specification says
// (intake's own signer is checked against the inbox in intake's
// internal/inboxcheck): "v1," and the base64 HMAC-SHA256 of
// "{id}.{timestamp}.{body}" under the secret's key.
func sign(t testing.TB, secret, id string, timestamp int64, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// newSecret is a fresh signing secret of 32 random bytes, as intake's.
func newSecret() string {
	key := make([]byte, 32)
	rand.Read(key)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// The Standard Webhooks specification's test vector, the one its
// reference libraries verify.
func TestVerifyTakesTheStandardWebhooksVector(t *testing.T) {
	keys, err := secretKeys([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{keys: keys, tolerance: 5 * time.Minute, now: func() time.Time { return time.Unix(1614265330, 0) }}
	hdr := http.Header{}
	hdr.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	hdr.Set("webhook-timestamp", "1614265330")
	hdr.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	if id, err := h.verify(hdr, []byte(`{"test": 2432232314}`)); err != nil || id != "msg_p5jXN8AQM9LWM0D4loKWxJek" {
		t.Fatalf("the vector: %q, %v", id, err)
	}
	if _, err := h.verify(hdr, []byte(`{"test": 2432232315}`)); err == nil {
		t.Fatal("the vector's signature verified another body")
	}
	if got := sign(t, testSecret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)); got != hdr.Get("webhook-signature") {
		t.Fatalf("the tests' signer makes %s for the vector", got)
	}
}

// During a rotation intake signs under both secrets (space-separated
// signatures) and the application holds one or both: any pairing that
// shares a secret verifies, and none other.
func TestVerifyTakesAnySignatureUnderAnyHeldSecret(t *testing.T) {
	old, next, stranger := newSecret(), newSecret(), newSecret()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt-1","type":"x"}`)
	sign := func(secrets ...string) string {
		var sigs []string
		for _, s := range secrets {
			sigs = append(sigs, sign(t, s, "evt-1", now.Unix(), body))
		}
		return strings.Join(sigs, " ")
	}
	for _, c := range []struct {
		name    string
		held    []string
		signed  string
		success bool
	}{
		{"old signature, old secret", []string{old}, sign(old), true},
		{"both signatures, old secret", []string{old}, sign(next, old), true},
		{"both signatures, new secret", []string{next}, sign(next, old), true},
		{"old signature, both secrets", []string{next, old}, sign(old), true},
		{"another's signature", []string{next, old}, sign(stranger), false},
		{"a v1a signature first", []string{old}, "v1a,AAAA " + sign(old), true},
		{"a signature that is not base64", []string{old}, "v1,***", false},
	} {
		keys, err := secretKeys(c.held)
		if err != nil {
			t.Fatal(err)
		}
		h := &Handler{keys: keys, tolerance: time.Minute, now: func() time.Time { return now }}
		hdr := http.Header{}
		hdr.Set("webhook-id", "evt-1")
		hdr.Set("webhook-timestamp", "1800000000")
		hdr.Set("webhook-signature", c.signed)
		if _, err := h.verify(hdr, body); (err == nil) != c.success {
			t.Errorf("%s: verified %v (%v), want %v", c.name, err == nil, err, c.success)
		}
	}
}

func TestVerifyRefusesAnIDThatCannotBeRecorded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keys, _ := secretKeys([]string{testSecret})
	h := &Handler{keys: keys, tolerance: time.Minute, now: func() time.Time { return now }}
	for _, id := range []string{strings.Repeat("e", maxIDLength+1), "evt 1", "évt-1"} {
		sig := sign(t, testSecret, id, now.Unix(), nil)
		hdr := http.Header{}
		hdr.Set("webhook-id", id)
		hdr.Set("webhook-timestamp", "1800000000")
		hdr.Set("webhook-signature", sig)
		if _, err := h.verify(hdr, nil); err == nil {
			t.Errorf("took id %.20q…", id)
		}
	}
}

package provider

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

const (
	hmacSecret = "generic-provider-secret"
	hmacBody   = `{"event_id":"e-42","kind":"order.created","order":{"id":7}}`
)

func hmacRequest(body string, kv ...string) *Request {
	return &Request{Method: "POST", Header: headers(kv...), Body: []byte(body), ReceivedAt: received}
}

func TestHMACValidateConfig(t *testing.T) {
	valid := []Config{
		{"header": "X-Signature"},
		{"header": "X-Signature", "algorithm": "sha1", "encoding": "base64", "prefix": "sha1="},
		{"header": "X-Signature", "algorithm": "sha512", "signed": "timestamp.body", "timestamp_header": "X-Timestamp", "tolerance": "10m"},
		{"header": "X-Signature", "id_header": "X-Id", "type_field": "kind"},
		{"header": "X-Signature", "algorithm": "SHA256", "encoding": "Base64"},
	}
	for _, cfg := range valid {
		if err := adapter(t, "hmac").ValidateConfig(cfg); err != nil {
			t.Errorf("ValidateConfig(%v) = %v, want nil", cfg, err)
		}
	}
	invalid := map[string]Config{
		"missing header":                  {},
		"empty header":                    {"header": ""},
		"header not a string":             {"header": 5.0},
		"unknown algorithm":               {"header": "X-Signature", "algorithm": "md5"},
		"unknown encoding":                {"header": "X-Signature", "encoding": "base32"},
		"unknown signed":                  {"header": "X-Signature", "signed": "body.timestamp"},
		"timestamp without header":        {"header": "X-Signature", "signed": "timestamp.body"},
		"timestamp header with body only": {"header": "X-Signature", "timestamp_header": "X-Timestamp"},
		"bad tolerance":                   {"header": "X-Signature", "signed": "timestamp.body", "timestamp_header": "X-Timestamp", "tolerance": "0s"},
		"id in both header and field":     {"header": "X-Signature", "id_header": "X-Id", "id_field": "id"},
		"type in both header and field":   {"header": "X-Signature", "type_header": "X-Type", "type_field": "type"},
		"type field not a string":         {"header": "X-Signature", "type_field": true},
	}
	for name, cfg := range invalid {
		if err := adapter(t, "hmac").ValidateConfig(cfg); err == nil {
			t.Errorf("%s: ValidateConfig(%v) = nil, want an error", name, cfg)
		}
	}
}

func TestHMACVerifiesHexSHA256OfBodyByDefault(t *testing.T) {
	cfg := Config{"header": "X-Signature"}
	r := hmacRequest(hmacBody, "X-Signature", sha256Hex(hmacSecret, hmacBody))
	wantVerified(t, adapter(t, "hmac").Verify(r, secrets(hmacSecret), cfg))
}

func TestHMACMatchesGitHubDocumentedExampleWhenConfiguredLikeGitHub(t *testing.T) {
	cfg := Config{"header": "X-Hub-Signature-256", "prefix": "sha256="}
	r := hmacRequest(ghDocPayload, "X-Hub-Signature-256", ghDocSignature)
	wantVerified(t, adapter(t, "hmac").Verify(r, secrets(ghDocSecret), cfg))
}

func TestHMACVerifiesBase64SHA512WithPrefix(t *testing.T) {
	m := hmac.New(sha512.New, []byte(hmacSecret))
	m.Write([]byte(hmacBody))
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
	cfg := Config{"header": "X-Signature", "algorithm": "sha512", "encoding": "base64", "prefix": "sha512="}
	a := adapter(t, "hmac")
	wantVerified(t, a.Verify(hmacRequest(hmacBody, "X-Signature", "sha512="+sig), secrets(hmacSecret), cfg))
	// Unpadded base64 and an upper-case prefix are the same signature.
	wantVerified(t, a.Verify(hmacRequest(hmacBody, "X-Signature", "SHA512="+strings.TrimRight(sig, "=")), secrets(hmacSecret), cfg))
	wantRejected(t, a.Verify(hmacRequest(hmacBody, "X-Signature", sig), secrets(hmacSecret), cfg))
}

func TestHMACVerifiesSHA1(t *testing.T) {
	cfg := Config{"header": "X-Signature", "algorithm": "sha1"}
	r := hmacRequest(hmacBody, "X-Signature", hexMAC(sha1.New, hmacSecret, hmacBody))
	wantVerified(t, adapter(t, "hmac").Verify(r, secrets(hmacSecret), cfg))
}

var hmacTimestampCfg = Config{"header": "X-Signature", "signed": "timestamp.body", "timestamp_header": "X-Timestamp"}

func TestHMACVerifiesSignedTimestampWithinTolerance(t *testing.T) {
	ts := unix(received.Add(-time.Minute))
	r := hmacRequest(hmacBody, "X-Signature", sha256Hex(hmacSecret, ts+"."+hmacBody), "X-Timestamp", ts)
	wantVerified(t, adapter(t, "hmac").Verify(r, secrets("old", hmacSecret), hmacTimestampCfg))
}

func TestHMACVerifiesOldMessageAtItsReceivedTime(t *testing.T) {
	signedAt := time.Date(2020, 2, 2, 2, 2, 2, 0, time.UTC)
	ts := unix(signedAt)
	r := hmacRequest(hmacBody, "X-Signature", sha256Hex(hmacSecret, ts+"."+hmacBody), "X-Timestamp", ts)
	r.ReceivedAt = signedAt.Add(30 * time.Second)
	wantVerified(t, adapter(t, "hmac").Verify(r, secrets(hmacSecret), hmacTimestampCfg))
}

func TestHMACRejects(t *testing.T) {
	ts := unix(received)
	good := sha256Hex(hmacSecret, ts+"."+hmacBody)
	cases := []struct {
		name    string
		r       *Request
		cfg     Config
		secrets [][]byte
	}{
		{"tampered body", hmacRequest(hmacBody+" ", "X-Signature", good, "X-Timestamp", ts), hmacTimestampCfg, secrets(hmacSecret)},
		{"wrong secret", hmacRequest(hmacBody, "X-Signature", good, "X-Timestamp", ts), hmacTimestampCfg, secrets("nope")},
		{"empty secret", hmacRequest(hmacBody, "X-Signature", sha256Hex("", ts+"."+hmacBody), "X-Timestamp", ts), hmacTimestampCfg, secrets("")},
		{"stale timestamp", func() *Request {
			r := hmacRequest(hmacBody, "X-Signature", good, "X-Timestamp", ts)
			r.ReceivedAt = received.Add(6 * time.Minute)
			return r
		}(), hmacTimestampCfg, secrets(hmacSecret)},
		{"future timestamp", func() *Request {
			r := hmacRequest(hmacBody, "X-Signature", good, "X-Timestamp", ts)
			r.ReceivedAt = received.Add(-6 * time.Minute)
			return r
		}(), hmacTimestampCfg, secrets(hmacSecret)},
		{"missing signature header", hmacRequest(hmacBody, "X-Timestamp", ts), hmacTimestampCfg, secrets(hmacSecret)},
		{"missing timestamp header", hmacRequest(hmacBody, "X-Signature", good), hmacTimestampCfg, secrets(hmacSecret)},
		{"body-only signature when timestamp is signed", hmacRequest(hmacBody, "X-Signature", sha256Hex(hmacSecret, hmacBody), "X-Timestamp", ts), hmacTimestampCfg, secrets(hmacSecret)},
		{"missing prefix", hmacRequest(hmacBody, "X-Signature", sha256Hex(hmacSecret, hmacBody)), Config{"header": "X-Signature", "prefix": "sha256="}, secrets(hmacSecret)},
		{"not hex", hmacRequest(hmacBody, "X-Signature", "xyz"), Config{"header": "X-Signature"}, secrets(hmacSecret)},
		{"wrong algorithm", hmacRequest(hmacBody, "X-Signature", hexMAC(sha1.New, hmacSecret, hmacBody)), Config{"header": "X-Signature"}, secrets(hmacSecret)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRejected(t, adapter(t, "hmac").Verify(c.r, c.secrets, c.cfg))
		})
	}
}

func TestHMACVerifyRefusesInvalidConfigWithoutClaimingBadSignature(t *testing.T) {
	err := adapter(t, "hmac").Verify(hmacRequest(hmacBody, "X-Signature", "00"), secrets(hmacSecret), Config{"algorithm": "md5"})
	wantPermanent(t, err)
}

func TestHMACInterpretsConfiguredIDAndType(t *testing.T) {
	a := adapter(t, "hmac")
	cases := []struct {
		name           string
		cfg            Config
		r              *Request
		wantID, wantTy string
	}{
		{"fields", Config{"header": "X-Signature", "id_field": "event_id", "type_field": "kind"},
			hmacRequest(hmacBody), "e-42", "hmac.order.created"},
		{"headers", Config{"header": "X-Signature", "id_header": "X-Event-Id", "type_header": "X-Event-Type"},
			hmacRequest(hmacBody, "X-Event-Id", "h-1", "X-Event-Type", "order.paid"), "h-1", "hmac.order.paid"},
		{"numeric id field", Config{"header": "X-Signature", "id_field": "n"},
			hmacRequest(`{"n":12345678901234567890}`), "12345678901234567890", "hmac.message"},
		{"nothing configured", Config{"header": "X-Signature"}, hmacRequest(hmacBody), "", "hmac.message"},
		{"absent field", Config{"header": "X-Signature", "id_field": "missing", "type_field": "missing"},
			hmacRequest(hmacBody), "", "hmac.message"},
		{"type with odd characters", Config{"header": "X-Signature", "type_header": "X-Event-Type"},
			hmacRequest(hmacBody, "X-Event-Type", "order created!"), "", "hmac.order_created_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := oneEvent(t, a, c.r, c.cfg)
			if ev.ProviderEventID != c.wantID || ev.Type != c.wantTy {
				t.Fatalf("got id %q type %q, want %q %q", ev.ProviderEventID, ev.Type, c.wantID, c.wantTy)
			}
		})
	}
}

func TestHMACKeepsNonJSONBodyOutOfDataUnlessFieldsNeedIt(t *testing.T) {
	a := adapter(t, "hmac")
	ev := oneEvent(t, a, hmacRequest("a=1&b=2"), Config{"header": "X-Signature"})
	if string(ev.Data) != "null" || !ev.DataTruncated {
		t.Errorf("Data = %s truncated %v; want null and the raw body by address", ev.Data, ev.DataTruncated)
	}
	_, err := a.Interpret(hmacRequest("a=1&b=2"), Config{"header": "X-Signature", "id_field": "id"})
	wantPermanent(t, err)
}

package provider

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/intakehq/intake"
)

// The fuzz target's fixed secrets. The oracle below signs with them the way
// each provider does; an accepted request must carry that exact signature.
var (
	fuzzKey       = "fuzz-signing-secret"
	fuzzEdPrivate = ed25519.NewKeyFromSeed([]byte("0123456789abcdef0123456789abcdef"))
	fuzzHMACCfg   = Config{
		"header": "X-Signature", "prefix": "sha256=", "signed": "timestamp.body",
		"timestamp_header": "X-Timestamp", "id_header": "X-Event-Id", "type_field": "type",
	}
)

func fuzzSecrets(name string) [][]byte {
	if name == "standard" {
		pub := fuzzEdPrivate.Public().(ed25519.PublicKey)
		return secrets(
			"whsec_"+base64.StdEncoding.EncodeToString([]byte(fuzzKey)),
			"whpk_"+base64.StdEncoding.EncodeToString(pub))
	}
	return secrets("an-older-secret", fuzzKey)
}

func fuzzConfig(name string) Config {
	if name == "hmac" {
		return fuzzHMACCfg
	}
	return nil
}

// fuzzRequest places the fuzzed strings where adapter name reads them.
func fuzzRequest(name, id, ts, sig, event string, body []byte, receivedAt int64) *Request {
	h := http.Header{}
	switch name {
	case "standard":
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
	case "stripe":
		h.Set("Stripe-Signature", "t="+ts+","+sig)
	case "github":
		h.Set("X-Hub-Signature-256", sig)
		h.Set("X-Hub-Signature", sig)
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", id)
	case "slack":
		h.Set("X-Slack-Signature", sig)
		h.Set("X-Slack-Request-Timestamp", ts)
	case "hmac", "none":
		h.Set("X-Signature", sig)
		h.Set("X-Timestamp", ts)
		h.Set("X-Event-Id", id)
	}
	return &Request{Method: "POST", Header: h, Body: body, ReceivedAt: time.Unix(receivedAt, 0)}
}

// fuzzSignature is what a genuine sender would put in the signature header
// for these inputs (for Stripe, the element after "t=...,").
func fuzzSignature(name, id, ts string, body []byte) string {
	b := string(body)
	switch name {
	case "standard":
		content := id + "." + ts + "." + b
		m := hmac.New(sha256.New, []byte(fuzzKey))
		m.Write([]byte(content))
		return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	case "stripe":
		return "v1=" + sha256Hex(fuzzKey, ts+"."+b)
	case "github":
		return "sha256=" + sha256Hex(fuzzKey, b)
	case "slack":
		return "v0=" + sha256Hex(fuzzKey, "v0:"+ts+":"+b)
	case "hmac":
		return "sha256=" + sha256Hex(fuzzKey, ts+"."+b)
	}
	return ""
}

// genuinelySigned is the oracle: does the signature header contain the
// signature a holder of the fixed secrets would have produced? Decoders
// accept what the oracle's exact text match would not (hex case, base64
// line breaks, prefix case), so both sides are normalised first.
func genuinelySigned(name, id, ts, sig string, body []byte) bool {
	clean := strings.NewReplacer("\r", "", "\n", "").Replace(sig)
	if name == "standard" {
		content := []byte(id + "." + ts + "." + string(body))
		ed := "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(fuzzEdPrivate, content))
		return strings.Contains(clean, fuzzSignature(name, id, ts, body)) || strings.Contains(clean, ed)
	}
	return strings.Contains(strings.ToLower(clean), fuzzSignature(name, id, ts, body))
}

func FuzzAdapters(f *testing.F) {
	names := Names()
	index := map[string]uint8{}
	for i, n := range names {
		index[n] = uint8(i)
	}
	at := received.Unix()
	ts := unix(received)
	seed := func(name, id, ts, event string, body string, mangle func(string) string) {
		sig := fuzzSignature(name, id, ts, []byte(body))
		if mangle != nil {
			sig = mangle(sig)
		}
		f.Add(index[name], id, ts, sig, event, []byte(body), at)
	}
	flip := func(s string) string { return strings.TrimSuffix(s, s[len(s)/2:]) + "00" }
	for _, name := range names {
		seed(name, "msg_1", ts, "push", stripeBody, nil)
		seed(name, "msg_1", ts, "push", stripeBody, flip)
		seed(name, "", "", "", "", nil)
	}
	seed("slack", "", ts, "", slackDocBody, nil)
	seed("slack", "", ts, "", `{"type":"url_verification","challenge":"c"}`, nil)
	seed("slack", "", ts, "", "payload="+`{"type":"block_actions","trigger_id":"t","channel":{"id":"C"}}`, nil)
	seed("github", "d", "", "pull_request", ghPullRequestBody, nil)
	seed("standard", "msg_2", ts, "", swBody, func(s string) string { return "v2,x " + s + " v1a,AAAA" })
	seed("stripe", "", ts, "", stripeBody, func(s string) string { return "v0=00," + s + ",t=1" })
	seed("hmac", "e-1", "-1", "", `{"type":7}`, strings.ToUpper)

	f.Fuzz(func(t *testing.T, which uint8, id, ts, sig, event string, body []byte, receivedAt int64) {
		name := names[int(which)%len(names)]
		a, _ := Lookup(name)
		cfg := fuzzConfig(name)
		r := fuzzRequest(name, id, ts, sig, event, body, receivedAt)

		if name != "none" {
			err := a.Verify(r, fuzzSecrets(name), cfg)
			if err == nil && !genuinelySigned(name, id, ts, sig, body) {
				t.Fatalf("%s accepted a request not signed with its secret: id %q ts %q sig %q body %q",
					name, id, ts, sig, body)
			}
			if err != nil && !errors.Is(err, ErrSignature) {
				t.Fatalf("%s: Verify error %v is not ErrSignature", name, err)
			}
		}
		in, err := a.Interpret(r, cfg)
		if err == nil {
			for _, ev := range in.Events {
				if !strings.HasPrefix(ev.Type, name+".") {
					t.Fatalf("%s: event type %q lacks the provider prefix", name, ev.Type)
				}
				if !json.Valid(ev.Data) || !utf8.Valid(ev.Data) || len(ev.Data) > intake.MaxEventData {
					t.Fatalf("%s: event data %q is not small UTF-8 JSON", name, ev.Data)
				}
			}
		}
		if c, ok := a.(Challenger); ok {
			c.Challenge(r, fuzzSecrets(name), cfg)
		}
	})
}

func TestFuzzOracleSignsWhatAdaptersAccept(t *testing.T) {
	// Without this the fuzz target's accept path could be dead: every seed
	// signed by the oracle must verify.
	ts := unix(received)
	for _, name := range Names() {
		if name == "none" {
			continue
		}
		sig := fuzzSignature(name, "msg_1", ts, []byte(stripeBody))
		r := fuzzRequest(name, "msg_1", ts, sig, "push", []byte(stripeBody), received.Unix())
		if err := adapter(t, name).Verify(r, fuzzSecrets(name), fuzzConfig(name)); err != nil {
			t.Errorf("%s: oracle-signed request rejected: %v", name, err)
		}
	}
}
